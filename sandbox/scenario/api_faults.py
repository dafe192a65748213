"""Arm the provider's API faults (error bursts, slow answers, token expiry) on cue."""

from __future__ import annotations

from sandbox.scenario.events import ApiErrors, ApiFault, ApiSlow
from sandbox.state import SandboxProvider


def arm(provider: SandboxProvider, fault: ApiFault) -> None:
    """Script the fault on the provider; it hits whoever calls the API next."""
    if isinstance(fault, ApiErrors | ApiSlow):
        # Both families take the same fault calls; the accounts one has its own queue.
        target = provider if fault.api == "qrcode" else provider.accounts
        if isinstance(fault, ApiErrors):
            target.fail_next(
                fault.count,
                status=fault.status,
                retry_after=fault.retry_after,
                endpoint=fault.endpoint,
            )
        else:
            target.delay_next(fault.count, seconds=fault.seconds, endpoint=fault.endpoint)
        return
    if fault.api in ("qrcode", "both"):
        provider.expire_tokens()
    if fault.api in ("accounts", "both"):
        provider.accounts.expire_tokens()


def describe(fault: ApiFault) -> str:
    if isinstance(fault, ApiErrors):
        after = f" (Retry-After {fault.retry_after}s)" if fault.retry_after is not None else ""
        return f"next {fault.count} {fault.endpoint} requests answer {fault.status}{after}"
    if isinstance(fault, ApiSlow):
        return f"next {fault.count} {fault.endpoint} requests answer after {fault.seconds:g}s"
    return "every access token issued so far expires"
