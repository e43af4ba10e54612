// Fair burst admission of lazy starts on the real control plane (pods run through kwok): the
// operator's gate lets lazy starts create their pods at its rate, in creation order; the
// service's progress stream tells a queued launch its place and an estimate; a launch still queued
// at its timeout answers 551 and its session keeps its place; a deleted queued session leaves the
// queue; limits apply to queued sessions; a restarted operator finds the same queue.
import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { byCreation } from '../../server/src/model/admission.js';
import { API_VERSION, LABELS } from '../../server/src/model/api-group.js';
import { findCondition } from '../../server/src/model/conditions.js';
import { ErrorCode } from '../../server/src/model/error-codes.js';
import { sessionNameFor } from '../../server/src/model/names.js';
import { SESSION_ADMITTED_CONDITION, SessionAdmittedReason, type Session } from '../../server/src/model/session.js';
import { eventually } from '../support/kube.js';
import { appDefinitionSpec, createSession, lazySessionPods, running, waitForSession } from '../support/operator.js';
import {
  call,
  SERVICE_AUTH_TOKEN,
  takeServerSentEvents,
  type StreamMessage,
  type TestService,
} from '../support/service-harness.js';
import { useStack } from '../support/stack.js';

interface Place {
  position: number;
  estimatedWaitSeconds?: number;
}
interface SessionMessage {
  name: string;
  phase?: string;
  url?: string;
  queue?: Place;
}

/** Follows a workspace's progress stream (Server-Sent Events) and keeps its `session` messages. */
function followProgress(service: TestService, user: string, workspace: string) {
  const controller = new AbortController();
  const sessions: SessionMessage[] = [];
  const path = `/service/session/events/${SERVICE_AUTH_TOKEN}/${encodeURIComponent(user)}/${workspace}`;
  const opened = fetch(`${service.url}${path}`, { signal: controller.signal }).then((response) => {
    assert.equal(response.status, 200);
    return response;
  });
  const reading = (async () => {
    const response = await opened;
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    const messages: StreamMessage[] = [];
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer = takeServerSentEvents(buffer + value, messages);
      for (const m of messages.splice(0)) if (m.event === 'session') sessions.push(m.data as unknown as SessionMessage);
    }
  })().catch(() => undefined);
  return {
    sessions,
    opened,
    places: () => sessions.flatMap((m) => (m.queue ? [m.queue] : [])),
    close: async () => {
      controller.abort();
      await reading;
    },
  };
}

const admission = (s: Session) => findCondition(s.status?.conditions, SESSION_ADMITTED_CONDITION);
const admittedAt = (s: Session) => {
  const condition = admission(s);
  assert.equal(condition?.status, 'True', `${s.metadata.name} is not admitted: ${JSON.stringify(condition)}`);
  return Date.parse(condition.lastTransitionTime);
};

describe('operator: fair burst admission of lazy starts, with a visible queue', function () {
  this.timeout(300_000);

  describe('at 2 lazy starts a second, bursts of 2', () => {
    const rate = { perSecond: 2, burst: 2 };
    const stack = useStack('admission', {
      apps: [appDefinitionSpec('python-latest')],
      operator: { eagerStart: false, lazyStartsPerSecond: rate.perSecond, lazyStartBurst: rate.burst },
      service: {},
    });

    it('admits twelve lazy launches in creation order, never faster than the rate; each queued one sees its place fall', async () => {
      // Session pod creations as a watch reports them, with the test's clock at the report.
      const created: { name: string; at: number }[] = [];
      const watch = await new k8s.Watch(stack.kc).watch(
        `/api/v1/namespaces/${stack.namespace}/pods`,
        {},
        (type: string, p: k8s.V1Pod) => {
          if (type === 'ADDED' && p.metadata?.labels?.[LABELS.component] === 'session') {
            created.push({ name: p.metadata.name!, at: Date.now() });
          }
        },
        () => undefined,
      );
      const launches = Array.from({ length: 12 }, (_, i) => {
        const workspace = `ws-burst-${String(i).padStart(2, '0')}`;
        return { user: `student-${i}@example.com`, workspace, name: sessionNameFor(workspace) };
      });
      const streams = launches.map((l) => followProgress(stack.service, l.user, l.workspace));
      try {
        await Promise.all(streams.map((s) => s.opened));
        const start = Date.now();
        // One after another, so that creation order is the order of their names too.
        for (const l of launches)
          await createSession(stack.resources, l.name, { user: l.user, appDefinition: 'python-latest' });
        const creating = Date.now() - start;
        const sessions = await Promise.all(
          launches.map((l) => waitForSession(stack.resources, l.name, running, 120_000)),
        );
        await eventually(
          () =>
            assert.ok(
              streams.every((s) => s.sessions.some((m) => m.url)),
              'every stream has its URL',
            ),
          30_000,
        );

        // The gate's record: admissions in creation order, and within any window at most
        // burst + rate × its length (its own clock, the condition's lastTransitionTime).
        const ordered = [...sessions].sort(byCreation);
        assert.deepEqual(
          ordered.map((s) => s.metadata.name),
          launches.map((l) => l.name),
        );
        const times = ordered.map(admittedAt);
        for (let i = 1; i < times.length; i++) {
          assert.ok(times[i]! >= times[i - 1]!, `${launches[i]!.name} admitted before ${launches[i - 1]!.name}`);
        }
        for (let i = 0; i < times.length; i++) {
          for (let j = i; j < times.length; j++) {
            const allowed = rate.burst + (rate.perSecond * (times[j]! - times[i]!)) / 1000;
            assert.ok(j - i + 1 <= allowed + 1e-6, `admissions ${i}..${j}: ${j - i + 1} > ${allowed}`);
          }
        }
        // What the API server saw: by each pod creation's report, no more session pods than the
        // gate allows since before the first launch (reports come after creations: a bound, never a race).
        assert.equal(created.length, 12);
        created.forEach((d, k) => {
          const allowed = rate.burst + (rate.perSecond * (d.at - start)) / 1000;
          assert.ok(k + 1 <= allowed + 1e-6, `${k + 1} pods by ${d.at - start} ms: more than ${allowed}`);
        });

        // The queue as the launches saw it: a place that only falls, with the estimate at the rate.
        const queued = streams.filter((s) => s.places().length > 0);
        // Twelve at once against a burst of 2: the first passes would have to spread over 5 s for
        // none to wait (how many wait depends on how fast the passes come, so no more is asserted).
        assert.ok(queued.length > 0, `no launch saw a queue (${creating} ms to create them)`);
        for (const [i, stream] of streams.entries()) {
          const places = stream.places();
          for (const [k, place] of places.entries()) {
            assert.ok(place.position >= 1 && place.position <= i + 1, `${launches[i]!.name}: ${place.position}`);
            assert.equal(place.estimatedWaitSeconds, Math.ceil(place.position / rate.perSecond));
            if (k > 0) assert.ok(place.position <= places[k - 1]!.position, `${launches[i]!.name}: place rose`);
          }
          // Once admitted, the stream carries no place any more.
          assert.equal(stream.sessions.at(-1)!.queue, undefined);
        }
      } finally {
        watch.abort();
        await Promise.all(streams.map((s) => s.close()));
      }
    });
  });

  describe('at one lazy start every 7 seconds', () => {
    const perSecond = 0.15;
    /**
     * Shorter than the last queued session's wait below (a restarted operator admits one at once, the
     * next a period later), longer than a start takes.
     */
    const startDeadlineSeconds = 5;
    const config = { eagerStart: false, sessionsPerUser: 1, lazyStartsPerSecond: perSecond, lazyStartBurst: 1 };
    const stack = useStack('admission-slow', {
      // Shorter than some waits in the queue below: the start deadline counts from the admission.
      apps: [appDefinitionSpec('python-latest', { startDeadlineSeconds })],
      operator: config,
      service: {},
    });
    const launch = (user: string, workspaceName: string, timeout: number) =>
      call(stack.service.url, 'POST', '/service', {
        body: { appId: SERVICE_AUTH_TOKEN, user, appDefinition: 'python-latest', workspaceName, timeout },
      });
    const queuedCondition = async (name: string) => {
      const s = await waitForSession(
        stack.resources,
        name,
        (x) => admission(x)?.reason === SessionAdmittedReason.queued,
      );
      return admission(s)!;
    };

    it('a launch still queued at its timeout answers 551 saying so; its session keeps its place and a relaunch gets the URL', async () => {
      // The first takes the one token; the launch behind it waits about 7 s for the next.
      await createSession(stack.resources, 'session-first', {
        user: 'first@example.com',
        appDefinition: 'python-latest',
      });
      await waitForSession(stack.resources, 'session-first', (s) => admission(s)?.status === 'True');
      const user = 'late@example.com';
      const workspace = 'ws-late';
      const stream = followProgress(stack.service, user, workspace);
      try {
        await stream.opened;
        const answer = await launch(user, workspace, 0.04);
        assert.equal(answer.status, ErrorCode.launchTimeout, answer.text);
        assert.deepEqual(answer.json, {
          code: 551,
          reason:
            'the session is still queued for a start (position 1, about 7 s); it keeps its place: launch again to wait for it',
        });
        // Kept: the session, still queued (the operator's start deadline does not run in the queue), and its workspace.
        const kept = await stack.resources.sessions.get(sessionNameFor(workspace));
        assert.equal(kept.metadata.deletionTimestamp, undefined);
        assert.equal(admission(kept)?.reason, SessionAdmittedReason.queued);
        await stack.resources.workspaces.get(workspace);
        assert.deepEqual(stream.places().at(-1), { position: 1, estimatedWaitSeconds: Math.ceil(1 / perSecond) });

        const again = await launch(user, workspace, 1);
        assert.equal(again.status, 200, again.text);
        const session = await stack.resources.sessions.get(sessionNameFor(workspace));
        assert.equal(again.text, session.status?.url);
        assert.equal(session.metadata.uid, kept.metadata.uid);
      } finally {
        await stream.close();
      }
    });

    it('a deleted queued session leaves the queue; limits count queued sessions; a restarted operator finds the queue', async () => {
      // Wait for a token to be spent, so that the three below queue behind it.
      await createSession(stack.resources, 'session-gate', {
        user: 'gate@example.com',
        appDefinition: 'python-latest',
      });
      await waitForSession(stack.resources, 'session-gate', (s) => admission(s)?.status === 'True', 30_000);
      const names = ['ws-q-a', 'ws-q-b', 'ws-q-c'];
      const users = names.map((n) => `${n}@example.com`);
      const streams = names.map((w, i) => followProgress(stack.service, users[i]!, w));
      // Every write to the last one's Session until it is past the gate (a watch reports each).
      const last = sessionNameFor(names[2]!);
      const writesWhileWaiting: string[] = [];
      let passed = false;
      const watch = await new k8s.Watch(stack.kc).watch(
        `/apis/${API_VERSION}/namespaces/${stack.namespace}/sessions`,
        {},
        (type: string, s: Session) => {
          if (s.metadata?.name !== last || type !== 'MODIFIED' || passed) return;
          passed = admission(s)?.status === 'True';
          if (!passed) writesWhileWaiting.push(s.metadata.resourceVersion ?? '');
        },
        () => undefined,
      );
      try {
        await Promise.all(streams.map((s) => s.opened));
        for (const [i, w] of names.entries()) {
          await createSession(stack.resources, sessionNameFor(w), { user: users[i]!, appDefinition: 'python-latest' });
        }
        for (const w of names) await queuedCondition(sessionNameFor(w));
        await eventually(() => assert.equal(streams[2]!.places().at(-1)?.position, 3), 30_000);

        // A queued session counts against the user's sessions (sessionsPerUser 1): the next one is refused.
        await createSession(stack.resources, 'session-ws-q-b-again', {
          user: users[1]!,
          appDefinition: 'python-latest',
        });
        const refused = await waitForSession(
          stack.resources,
          'session-ws-q-b-again',
          (s) => s.status?.phase === 'Failed',
        );
        assert.equal(refused.status?.error?.code, ErrorCode.sessionsPerUserReached);

        // The middle one is deleted: the last moves up (behind the first, unless its token came
        // meanwhile), and the deleted one is never started.
        await stack.resources.sessions.delete(sessionNameFor(names[1]!));
        await eventually(async () => {
          const first = await stack.resources.sessions.get(sessionNameFor(names[0]!));
          const ahead = admission(first)?.status === 'False' ? 1 : 0;
          assert.equal(streams[2]!.places().at(-1)?.position, ahead + 1);
        }, 30_000);

        // A new operator (the old one stopped while they wait) rebuilds the queue from the sessions.
        await stack.restartOperator();
        const [a, c] = await Promise.all(
          [names[0]!, names[2]!].map((w) => waitForSession(stack.resources, sessionNameFor(w), running, 60_000)),
        );
        assert.ok(admittedAt(a!) <= admittedAt(c!), 'admitted out of creation order after the restart');
        // The last one waited longer than its app definition's start deadline, and still started.
        const waited = admittedAt(c!) - Date.parse(String(c!.metadata.creationTimestamp));
        assert.ok(waited > startDeadlineSeconds * 1000);
        // And its wait cost two writes whatever its length (its finalizer and start strategy, then
        // Queued), across two operators: none while the queue moved or the leader changed.
        assert.equal(writesWhileWaiting.length, 2, `${writesWhileWaiting.length} writes in ${waited} ms of waiting`);
        const pods = await lazySessionPods(stack.core, stack.namespace, sessionNameFor(names[1]!));
        assert.deepEqual(pods, [], 'the deleted queued session was started');
        // The service's stream follows its own watch: its last event may come a moment after the API's.
        await eventually(
          () => assert.equal(streams[2]!.sessions.at(-1)?.queue, undefined, 'the stream still shows a queue place'),
          10_000,
        );
      } finally {
        watch.abort();
        await Promise.all(streams.map((s) => s.close()));
      }
    });

    it('with the gate turned off, a restarted operator starts the queued sessions: Admitted True, none left Queued', async () => {
      // A token spent, so that the two below queue behind it.
      await createSession(stack.resources, 'session-gate-off', {
        user: 'gate-off@example.com',
        appDefinition: 'python-latest',
      });
      await waitForSession(stack.resources, 'session-gate-off', (s) => admission(s)?.status === 'True', 30_000);
      const names = ['session-off-a', 'session-off-b'];
      for (const name of names)
        await createSession(stack.resources, name, { user: `${name}@example.com`, appDefinition: 'python-latest' });
      for (const name of names) {
        await queuedCondition(name);
        // The rate the service's estimate reads, in the status written with the condition.
        assert.deepEqual((await stack.resources.sessions.get(name)).status?.lazyStartRate, {
          perSecond,
          burst: 1,
        });
      }

      // A new configuration (the gate off) while they wait.
      await stack.restartOperator({ lazyStartsPerSecond: 0 });
      for (const name of names) {
        const session = await waitForSession(stack.resources, name, running, 60_000);
        assert.equal(admission(session)?.status, 'True', `${name}: ${JSON.stringify(admission(session))}`);
      }
      const left = (await stack.resources.sessions.list()).filter(
        (s) => admission(s)?.reason === SessionAdmittedReason.queued,
      );
      assert.deepEqual(
        left.map((s) => s.metadata.name),
        [],
      );
    });
  });
});
