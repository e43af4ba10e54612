import assert from 'node:assert/strict';
import {
  decideStart,
  deepLink,
  launchEnvironment,
  readLaunchParameters,
  templateFor,
  withoutLaunchParameters,
  type LandingApp,
} from '../../src/landing/params.js';

const APPS: LandingApp[] = [
  { name: 'python-latest', label: 'Python', buildSystems: [] },
  {
    name: 'java-17-templates-latest',
    label: 'Java 17',
    buildSystems: [
      { id: 'maven', label: 'Maven' },
      { id: 'gradle', label: 'Gradle' },
    ],
  },
];

const query = (q: string) => new URLSearchParams(q);

describe('landing page: launch parameters', () => {
  it('reads exactly the spec parameters; gitToken and unknown names are ignored', () => {
    const params = readLaunchParameters(
      query(
        'appDef=python-latest&gitUri=https://u:p@h/r.git&gitUser=u&gitMail=u@x&platformUrl=https://p&platformToken=t&user=alice&gitToken=g&foo=bar',
      ),
      { identityProvider: false },
    );
    assert.deepEqual(params, {
      appDef: 'python-latest',
      gitUri: 'https://u:p@h/r.git',
      gitUser: 'u',
      gitMail: 'u@x',
      platformUrl: 'https://p',
      platformToken: 't',
      user: 'alice',
    });
  });

  it('accepts appdef as an alias; appDef wins when both are given', () => {
    assert.equal(readLaunchParameters(query('appdef=c-latest'), { identityProvider: false }).appDef, 'c-latest');
    assert.equal(
      readLaunchParameters(query('appdef=c-latest&appDef=python-latest'), { identityProvider: false }).appDef,
      'python-latest',
    );
  });

  it('reads user only in anonymous mode', () => {
    assert.equal(readLaunchParameters(query('user=alice'), { identityProvider: true }).user, undefined);
    assert.equal(readLaunchParameters(query('user=alice'), { identityProvider: false }).user, 'alice');
  });

  it('treats blank and oversized values as absent, trims the rest, keeps the first of repeated names', () => {
    const params = readLaunchParameters(
      query(`gitUri=%20%20&gitUser=%20bob%20&platformToken=${'x'.repeat(5000)}&gitMail=a&gitMail=b`),
      {
        identityProvider: false,
      },
    );
    assert.deepEqual(params, { gitUser: 'bob', gitMail: 'a' });
  });

  it('is not fooled by prototype names', () => {
    const params = readLaunchParameters(query('__proto__=x&constructor=y&toString=z'), { identityProvider: false });
    assert.deepEqual(params, {});
  });

  it('removes every launch parameter (and gitToken) from a query string, keeping the others', () => {
    assert.equal(withoutLaunchParameters('?appDef=a&gitUri=u&platformToken=t&gitToken=g&lang=de&user=x'), '?lang=de');
    assert.equal(withoutLaunchParameters('?appdef=a&platformToken=t'), '');
    assert.equal(withoutLaunchParameters(''), '');
  });
});

describe('landing page: auto-start decision', () => {
  const all = { appDef: 'python-latest', gitUri: 'https://h/r.git', platformToken: 't', user: 'alice' };
  const anonymous = { apps: APPS, identityProvider: false, authenticated: false };
  const signedIn = { apps: APPS, identityProvider: true, authenticated: true };

  it('auto-starts when appDef, gitUri and platformToken are present and appDef is whitelisted', () => {
    assert.deepEqual(decideStart(all, anonymous), { kind: 'auto', app: APPS[0] });
    const { user: _user, ...withoutUser } = all;
    assert.deepEqual(decideStart(withoutUser, signedIn), { kind: 'auto', app: APPS[0] });
  });

  it('appDef plus gitUri alone does not auto-start', () => {
    const { platformToken: _t, ...rest } = all;
    assert.deepEqual(decideStart(rest, anonymous), { kind: 'manual', app: APPS[0], missing: ['platformToken'] });
  });

  it('lists what is missing for the launch screen', () => {
    assert.deepEqual(decideStart({}, anonymous), {
      kind: 'manual',
      missing: ['appDef', 'gitUri', 'platformToken', 'user'],
    });
    const { user: _user, ...withoutUser } = all;
    assert.deepEqual(decideStart(withoutUser, anonymous), { kind: 'manual', app: APPS[0], missing: ['user'] });
  });

  it('an appDef that is not whitelisted is an error, whatever else is given', () => {
    assert.deepEqual(decideStart({ ...all, appDef: 'cobol-latest' }, anonymous), {
      kind: 'unknown-app',
      appDef: 'cobol-latest',
    });
    assert.deepEqual(decideStart({ appDef: 'python' }, anonymous).kind, 'unknown-app');
  });

  it('with the identity provider on, sign-in comes first', () => {
    assert.deepEqual(decideStart(all, { apps: APPS, identityProvider: true, authenticated: false }), { kind: 'login' });
    assert.deepEqual(decideStart({ appDef: 'nope' }, { apps: APPS, identityProvider: true, authenticated: false }), {
      kind: 'login',
    });
  });
});

describe('landing page: launch values', () => {
  it('builds env.fromMap with IDE=true and the values that are present', () => {
    assert.deepEqual(
      launchEnvironment(
        {
          appDef: 'java-17-templates-latest',
          gitUri: 'https://u:p@h/r.git',
          gitUser: 'u',
          gitMail: 'u@x',
          platformUrl: 'https://p',
          platformToken: 't',
          user: 'alice',
        },
        'gradle',
      ),
      {
        IDE: 'true',
        GIT_URI: 'https://u:p@h/r.git',
        GIT_USER: 'u',
        GIT_MAIL: 'u@x',
        PLATFORM_TOKEN: 't',
        PLATFORM_URL: 'https://p',
        TEMPLATE: 'gradle',
      },
    );
    assert.deepEqual(launchEnvironment({}), { IDE: 'true' });
  });

  it('picks the chosen build system when the app offers it, else its first; none for plain apps', () => {
    assert.equal(templateFor(APPS[1]!, 'gradle'), 'gradle');
    assert.equal(templateFor(APPS[1]!, 'bazel'), 'maven');
    assert.equal(templateFor(APPS[1]!), 'maven');
    assert.equal(templateFor(APPS[0]!, 'maven'), undefined);
  });
});

describe('landing page: deep links', () => {
  it('builds a link that reads back to the same parameters', () => {
    const params = {
      appDef: 'python-latest',
      gitUri: 'https://u:p@h/r.git?x=1&y=2',
      platformToken: 't&=?',
      user: 'a@b',
    };
    const link = deepLink('http://127.0.0.1:8081/', params);
    assert.ok(link.startsWith('http://127.0.0.1:8081/?appDef=python-latest&'));
    assert.deepEqual(readLaunchParameters(new URL(link).searchParams, { identityProvider: false }), params);
  });
});
