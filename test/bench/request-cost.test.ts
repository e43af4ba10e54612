// A request's cost is the median of its rounds, per process and in total: a round the machine's
// background fell on (a burst of another client's work) moves it less than a mean would.
import assert from 'node:assert/strict';
import { medianCost } from '../../scripts/bench/scenarios/request-cost.js';

describe('bench: what a request costs the control plane', () => {
  it('takes the median of the rounds, per process and of their sum', () => {
    const rounds = [
      { 'kube-apiserver': 3, etcd: 0.5, 'kube-controller-manager': 0 },
      { 'kube-apiserver': 3.5, etcd: 0.5, 'kube-controller-manager': 0.5 },
      // A round the background fell on.
      { 'kube-apiserver': 12, etcd: 4, 'kube-controller-manager': 3 },
    ];
    assert.deepEqual(medianCost(rounds), {
      'kube-apiserver': 3.5,
      etcd: 0.5,
      'kube-controller-manager': 0.5,
      total: 4.5,
    });
  });

  it('takes the mean of the middle two of an even number of rounds, and counts a missing process as 0', () => {
    const rounds: Record<string, number>[] = [{ 'kube-apiserver': 2 }, { 'kube-apiserver': 4, etcd: 1 }];
    assert.deepEqual(medianCost(rounds), {
      'kube-apiserver': 3,
      etcd: 0.5,
      'kube-controller-manager': 0,
      total: 3.5,
    });
  });
});
