"""Kept importable: the names of :mod:`turnfork.core.machine.continuation`, the same objects.

An earlier path of that module; it belongs to no tier (a vendored copy leaves it out), and new
code imports from the tier's front door.
"""

from .machine.continuation import (
    ACTIVATION_CLOSING,
    ACTIVATION_TEARDOWN_FAILED,
    CANCELLED,
    CONTINUATION_UNAVAILABLE,
    DRAINING,
    DUPLICATE_CHILD,
    MALFORMED_DESCRIPTOR,
    NOT_RESUMABLE,
    PARENT_UNAVAILABLE,
    PERSISTENCE_UNAVAILABLE,
    SUMMARY_MAX_CHARS,
    UNAUTHORIZED,
    UNSUPPORTED_CAPABILITY,
    ChildIdentity,
    ContinuablePlan,
    ContinuableStart,
    ContinuableTerms,
    ListingSlot,
    ResumeTerms,
    bound_summary,
    check_continuable,
    child_identity,
    continuable_descriptor,
    epoch_stop_reason,
    listing_slots,
    plan_continuable,
    refusal,
    report_message,
    resume_terms,
    same_lifecycle,
    settlement_notice,
    settlement_summary,
    teardown_failure_text,
)

__all__ = [
    "CONTINUATION_UNAVAILABLE", "PERSISTENCE_UNAVAILABLE", "UNSUPPORTED_CAPABILITY",
    "DUPLICATE_CHILD", "NOT_RESUMABLE", "UNAUTHORIZED", "ACTIVATION_CLOSING", "PARENT_UNAVAILABLE",
    "DRAINING", "ACTIVATION_TEARDOWN_FAILED", "CANCELLED", "MALFORMED_DESCRIPTOR",
    "SUMMARY_MAX_CHARS", "ContinuableStart", "ContinuableTerms", "ContinuablePlan", "ResumeTerms",
    "ChildIdentity", "continuable_descriptor", "check_continuable", "plan_continuable",
    "resume_terms", "child_identity", "same_lifecycle", "ListingSlot", "listing_slots",
    "teardown_failure_text", "epoch_stop_reason", "bound_summary",
    "settlement_summary", "settlement_notice", "report_message", "refusal",
]
