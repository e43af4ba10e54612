import assert from 'node:assert/strict';
import { InvalidInputError, parseDataPayload, parseKeyList } from '../src/payload.js';

function rejects(fn: () => unknown, message: string): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof InvalidInputError);
    assert.equal(error.message, message);
    return true;
  });
}

describe('extension: payload validation', () => {
  it('accepts an environment of strings', () => {
    assert.deepEqual(parseDataPayload('{"environment":{"A":"1","B":""}}'), { environment: { A: '1', B: '' } });
    assert.deepEqual(parseDataPayload('{"environment":{}}'), { environment: {} });
    assert.deepEqual(parseDataPayload('{"environment":{},"user":"ada@example.org"}'), {
      environment: {},
      user: 'ada@example.org',
    });
  });

  it('names the problem without echoing values', () => {
    rejects(() => parseDataPayload('{"environment":'), 'body is not valid JSON');
    rejects(() => parseDataPayload(''), 'body is not valid JSON');
    rejects(() => parseDataPayload('[1]'), 'body must be a JSON object, got an array');
    rejects(() => parseDataPayload('"s3cret"'), 'body must be a JSON object, got a string');
    rejects(() => parseDataPayload('null'), 'body must be a JSON object, got null');
    rejects(() => parseDataPayload('{}'), 'field "environment" is missing');
    rejects(
      () => parseDataPayload('{"environment":"s3cret"}'),
      'field "environment" must be an object of strings, got a string',
    );
    rejects(
      () => parseDataPayload('{"environment":["x"]}'),
      'field "environment" must be an object of strings, got an array',
    );
    rejects(() => parseDataPayload('{"environment":{"TOKEN":42}}'), 'environment.TOKEN must be a string, got a number');
    rejects(
      () => parseDataPayload('{"environment":{"TOKEN":{"v":"s3cret"}}}'),
      'environment.TOKEN must be a string, got an object',
    );
    rejects(() => parseDataPayload('{"environment":{"":"x"}}'), 'environment keys must not be empty');
    rejects(() => parseDataPayload('{"environment":{},"env":{}}'), 'unexpected field(s) "env"');
    // One user, one line: a second line would admit a second user.
    for (const user of ['ada@example.org\nmallory@example.org', '', 'a b', 42, 'x'.repeat(257)]) {
      rejects(
        () => parseDataPayload(JSON.stringify({ environment: {}, user })),
        'field "user" must be 1 to 256 characters without blanks or control characters',
      );
    }
  });

  it('checks the key list of dataBridge.getEnv', () => {
    assert.deepEqual(parseKeyList(['A', 'B']), ['A', 'B']);
    assert.deepEqual(parseKeyList([]), []);
    rejects(() => parseKeyList('A'), 'dataBridge.getEnv expects an array of key names, got a string');
    rejects(() => parseKeyList(undefined), 'dataBridge.getEnv expects an array of key names, got undefined');
    rejects(() => parseKeyList(['A', 3]), 'dataBridge.getEnv expects an array of key names, element 1 is a number');
    rejects(() => parseKeyList(['']), 'dataBridge.getEnv expects an array of key names, element 0 is empty');
  });
});
