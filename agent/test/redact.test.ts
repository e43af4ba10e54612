import assert from 'node:assert/strict';
import { hasCredentials, participationCloneUrl, redact, redactUrls, stripCredentials } from '../src/core/index.js';

describe('agent redaction', () => {
  it('removes user:pass@ from every URL in a text', () => {
    assert.equal(
      redactUrls("fatal: unable to access 'https://bob:t0k3n@git.example/x.git/': and http://a@h/y"),
      "fatal: unable to access 'https://git.example/x.git/': and http://h/y",
    );
  });

  it('replaces known secrets, also URL-encoded, and leaves short values alone', () => {
    assert.equal(redact('token a/b+c= and a%2Fb%2Bc%3D', ['a/b+c=']), 'token *** and ***');
    assert.equal(redact('abc', ['ab']), 'abc');
  });

  it('strips and detects credentials', () => {
    assert.equal(stripCredentials('https://u:p@h/r.git'), 'https://h/r.git');
    assert.equal(stripCredentials('git@h:r.git'), 'git@h:r.git');
    assert.ok(hasCredentials('https://u:p@h/r.git'));
    assert.ok(!hasCredentials('https://h/r.git'));
  });

  it('builds the participation clone URL, encoding both parts and replacing old credentials', () => {
    assert.equal(
      participationCloneUrl('https://old:x@git.example/c/r.git', 'stu dent', 't/k@n'),
      'https://stu%20dent:t%2Fk%40n@git.example/c/r.git',
    );
    assert.throws(() => participationCloneUrl('not a url', 'a', 'b'), /not a valid URL/);
  });
});
