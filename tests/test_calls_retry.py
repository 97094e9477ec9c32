"""The retry budget of a run and the delay before each retry."""

from __future__ import annotations

from ragmeter.calls.retry import RetryBudget, RetryPolicy, retry_delay


def test_retry_after_sets_the_delay_with_upward_jitter_else_the_backoff() -> None:
    policy = RetryPolicy(initial=2.0, max=30.0)
    assert retry_delay(policy, 1, None) == 2.0 and retry_delay(policy, 2, None) == 4.0
    for attempt in (1, 2, 3):
        assert 1.0 <= retry_delay(policy, attempt, 1.0) <= 1.1  # jitter only upwards
    assert retry_delay(policy, 1, 600.0) <= 66.0                # capped at max(max, 60 s)
    assert retry_delay(policy, 1, -5.0) == 0.0                  # a negative header is 0


def test_a_small_policy_max_still_waits_what_the_server_asked() -> None:
    policy = RetryPolicy(initial=0.01, max=0.1)
    assert 3.0 <= retry_delay(policy, 1, 3.0) <= 3.3
    assert retry_delay(policy, 5, None) <= 0.1


def test_budget_hands_out_exactly_its_total() -> None:
    budget = RetryBudget(3)
    assert [budget.take() for _ in range(5)] == [True, True, True, False, False]
    assert budget.used == 3
    budget.total += 1                      # a follow-up joined the batch
    assert budget.take() and not budget.take()
