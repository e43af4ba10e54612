import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  dnsLabel,
  generatedWorkspaceName,
  isDnsLabel,
  isLandingNameOfAnotherUser,
  landingWorkspaceName,
  repositoryName,
  sessionNameFor,
  sessionPodSelector,
  stringHash32,
  stripCredentials,
} from '../../src/model/names.js';

describe('names', () => {
  describe('dnsLabel', () => {
    it('lowercases and replaces characters outside [a-z0-9-]', () => {
      assert.equal(dnsLabel(['ws', 'Java_17', 'Student@Example.COM']), 'ws-java-17-student-example-com');
    });

    it('never yields an invalid DNS-1123 label, whatever the input', () => {
      fc.assert(
        fc.property(fc.array(fc.string({ unit: 'binary' }), { maxLength: 5 }), (parts) => {
          assert.ok(isDnsLabel(dnsLabel(parts)), JSON.stringify(parts));
        }),
      );
    });

    it('cuts long names and keeps a hash of the full input, so long inputs sharing a prefix differ', () => {
      const long = 'a'.repeat(80);
      const first = dnsLabel(['ws', long, 'alice']);
      const second = dnsLabel(['ws', long, 'bob']);
      assert.equal(first.length, 63);
      assert.equal(second.length, 63);
      assert.notEqual(first, second);
      assert.match(first, /-[0-9a-f]{8}$/);
    });

    it('keeps names that fit untouched', () => {
      assert.equal(dnsLabel(['ws', 'python-latest', 'bob']), 'ws-python-latest-bob');
    });
  });

  it('generatedWorkspaceName has the form ws-<appDef>-<user>-<uuid> and is DNS-safe', () => {
    const name = generatedWorkspaceName('python-latest', 'Bob@Uni.edu', '0f8fad5b-d9cb-469f-a165-70867728950e');
    assert.equal(name.startsWith('ws-python-latest-bob-uni-edu-'), true);
    assert.ok(isDnsLabel(name));
    const long = generatedWorkspaceName(
      'java-17-templates-latest',
      'a.very.long.student.name@some-university.example.org',
      '0f8fad5b-d9cb-469f-a165-70867728950e',
    );
    assert.ok(isDnsLabel(long));
    assert.equal(long.length, 63);
  });

  describe('sessionNameFor', () => {
    // Format asserted: was session-python-bob (the ws- prefix dropped, which made ws-x and x collide).
    it('keeps a workspace name that fits whole after session-', () => {
      assert.equal(sessionNameFor('ws-python-bob'), 'session-ws-python-bob');
      assert.equal(sessionNameFor('x'.repeat(55)), `session-${'x'.repeat(55)}`);
    });

    it('cuts a longer one to s-<head>-<hash of the whole name>, a DNS-1123 label of at most 63', () => {
      const name = sessionNameFor('ws-' + 'x'.repeat(60));
      assert.match(name, /^s-ws-x+-[0-9a-f]{24}$/);
      assert.ok(isDnsLabel(name));
      assert.equal(sessionNameFor('ws-' + 'x'.repeat(60)), name, 'deterministic');
    });

    it('gives distinct workspace names distinct session names (issue 15, item 10)', () => {
      assert.notEqual(sessionNameFor('ws-x'), sessionNameFor('x'));
      assert.notEqual(sessionNameFor('a--b'), sessionNameFor('a-b'));
      // The attack on the old cut form: a short name spelling out a long name's cut session name.
      const long = 'ws-' + 'y'.repeat(60);
      const crafted = sessionNameFor(long).slice('session-'.length);
      assert.notEqual(sessionNameFor(crafted), sessionNameFor(long));
      const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
      fc.assert(
        fc.property(label, label, (a, b) => {
          fc.pre(a !== b);
          assert.notEqual(sessionNameFor(a), sessionNameFor(b));
          assert.ok(isDnsLabel(sessionNameFor(a)), a);
        }),
      );
    });
  });

  describe('stripCredentials', () => {
    it('removes user:token@ from URLs', () => {
      assert.equal(stripCredentials('https://bob:s3cr3t@git.example.com/a/b.git'), 'https://git.example.com/a/b.git');
      assert.equal(stripCredentials('https://token@git.example.com/a/b.git'), 'https://git.example.com/a/b.git');
    });
    it('leaves URLs without credentials and non-URLs alone', () => {
      assert.equal(stripCredentials('https://git.example.com/a/b.git'), 'https://git.example.com/a/b.git');
      assert.equal(stripCredentials('git@github.com:a/b.git'), 'git@github.com:a/b.git');
    });
  });

  it('stringHash32 matches Java String.hashCode', () => {
    // Reference values of java.lang.String#hashCode.
    assert.equal(stringHash32(''), 0);
    assert.equal(stringHash32('abc'), 96354);
    assert.equal(stringHash32('hello'), 99162322);
    assert.equal(stringHash32('polygenelubricants'), -2147483648);
  });

  it('repositoryName takes the last path segment without .git', () => {
    assert.equal(repositoryName('https://u:p@git.example.com/group/My_Repo.git'), 'My_Repo');
    assert.equal(repositoryName('https://git.example.com/group/repo/'), 'repo');
    assert.equal(repositoryName('git@github.com:org/thing.git'), 'thing');
  });

  describe('landingWorkspaceName', () => {
    const uri = 'https://git.example.com/course/Exercise_01.git';

    // Format asserted: was ws-<app>-<repo>-<user>-<hash> with parts of 12 (no owner tag).
    it('builds ws-<app>-<repo>-<user>-<hash>-<tag> with parts cut to 10 characters', () => {
      const hash = Math.abs(stringHash32(uri)).toString(16).padStart(8, '0');
      const name = landingWorkspaceName('java-17-templates-latest', 'Student.Name@Example.com', uri);
      assert.match(name, new RegExp(`^ws-java-17-te-exercise-0-student-na-${hash}-[0-9a-f]{16}$`));
    });

    it('hashes gitUri with credentials removed, so a new token keeps the workspace', () => {
      const withToken = 'https://student:token-one@git.example.com/course/Exercise_01.git';
      const withOtherToken = 'https://student:token-two@git.example.com/course/Exercise_01.git';
      assert.equal(
        landingWorkspaceName('python-latest', 'bob', withToken),
        landingWorkspaceName('python-latest', 'bob', uri),
      );
      assert.equal(
        landingWorkspaceName('python-latest', 'bob', withToken),
        landingWorkspaceName('python-latest', 'bob', withOtherToken),
      );
    });

    it('differs between repositories and uses playground without gitUri', () => {
      assert.notEqual(
        landingWorkspaceName('python-latest', 'bob', uri),
        landingWorkspaceName('python-latest', 'bob', uri + 'x'),
      );
      assert.match(
        landingWorkspaceName('python-latest', 'bob'),
        /^ws-python-lat-playground-bob-00000000-[0-9a-f]{16}$/,
      );
    });

    it('differs between users whose cut user parts are the same (issue 15, item 10)', () => {
      const bob = landingWorkspaceName('python-latest', 'bob@example.com', uri);
      const other = landingWorkspaceName('python-latest', 'bob@example.net', uri);
      assert.equal(bob.slice(0, -17), other.slice(0, -17));
      assert.notEqual(bob, other);
      assert.equal(landingWorkspaceName('python-latest', 'bob@example.com', uri), bob, 'stable');
    });

    it('is reserved for its user: isLandingNameOfAnotherUser', () => {
      const bob = landingWorkspaceName('python-latest', 'bob@example.com', uri);
      assert.equal(isLandingNameOfAnotherUser(bob, 'bob@example.com'), false);
      assert.equal(isLandingNameOfAnotherUser(bob, 'mallory@example.com'), true);
      assert.equal(isLandingNameOfAnotherUser(bob, 'bob@example.net'), true);
      const playground = landingWorkspaceName('', '');
      assert.equal(isLandingNameOfAnotherUser(playground, ''), false);
      assert.equal(isLandingNameOfAnotherUser(playground, 'x'), true);
      // Names of another form are anybody's first come.
      assert.equal(isLandingNameOfAnotherUser('ws-stable-name', 'mallory@example.com'), false);
      assert.equal(isLandingNameOfAnotherUser('ws-python-bob-00000000', 'mallory@example.com'), false);
    });

    it('is always a DNS-1123 label', () => {
      fc.assert(
        fc.property(fc.string(), fc.string(), fc.webUrl(), (app, user, url) => {
          const name = landingWorkspaceName(app, user, url);
          assert.ok(isDnsLabel(name));
          assert.equal(isLandingNameOfAnotherUser(name, user), false);
        }),
      );
    });
  });
});

describe('sessionPodSelector', () => {
  const metadata = { name: 'session-a', uid: '0f8fad5b-d9cb-469f-a165-70867728950e' };
  it('selects a lazy session by its own app label', () => {
    assert.equal(
      sessionPodSelector({ metadata, spec: { appDefinition: 'python-latest' }, status: { startStrategy: 'lazy' } }),
      'app=session-a-0f8fad5b-d9cb-469f-a165-70867728950e',
    );
  });
  it('selects an eager session by the pool instance reserved for it', () => {
    assert.equal(
      sessionPodSelector({
        metadata,
        spec: { appDefinition: 'python-latest' },
        status: { startStrategy: 'eager', instanceId: '3' },
      }),
      'ide-cloud.io/pool-instance=python-latest-pool-3',
    );
  });
});
