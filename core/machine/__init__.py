"""The turn machine and continuation: what an agent's loop decides.

The agent's turn machine as one pure function (:mod:`.loop`, ``feed``), the stream assembler
(:mod:`.assembly`) and what an OpenAI Chat stream gives it (:mod:`.chat_stream`), the runtime
context and prompt variables a step writes (:mod:`.prompt`), the rest of what the loop driving
it decides (:mod:`.driver`: a step's prompt and header, the queued message, a flattened
failure), continuable children (:mod:`.continuation`), their control and report tools
(:mod:`.control`) and one-shot background jobs (:mod:`.jobs`).

A tier of its own: copy this folder with the log and delegation tiers beside it; it reads them
only through their front doors. This ``__all__`` is the tier's contract.
"""

from types import ModuleType as _ModuleType
from typing import TYPE_CHECKING as _TYPE_CHECKING

from .assembly import ASSEMBLY_KINDS as ASSEMBLY_KINDS
from .assembly import EMPTY_ASSEMBLY as EMPTY_ASSEMBLY
from .assembly import StreamAssembly as StreamAssembly
from .assembly import assemble_chunk as assemble_chunk
from .assembly import assembled_blocks as assembled_blocks
from .assembly import interrupted_blocks as interrupted_blocks
from .chat_stream import TRUNCATED_STREAM_TEXT as TRUNCATED_STREAM_TEXT
from .chat_stream import ChatStream as ChatStream
from .chat_stream import chat_body_failure as chat_body_failure
from .chat_stream import chat_error_failure as chat_error_failure
from .chat_stream import chat_failure_code as chat_failure_code
from .chat_stream import chat_status_failure as chat_status_failure
from .chat_stream import chat_stream as chat_stream
from .chat_stream import chat_stream_end as chat_stream_end
from .chat_stream import chat_stream_event as chat_stream_event
from .chat_stream import retry_after_ms as retry_after_ms
from .continuation import ACTIVATION_CLOSING as ACTIVATION_CLOSING
from .continuation import ACTIVATION_TEARDOWN_FAILED as ACTIVATION_TEARDOWN_FAILED
from .continuation import CANCELLED as CANCELLED
from .continuation import CONTINUATION_UNAVAILABLE as CONTINUATION_UNAVAILABLE
from .continuation import DRAINING as DRAINING
from .continuation import DUPLICATE_CHILD as DUPLICATE_CHILD
from .continuation import MALFORMED_DESCRIPTOR as MALFORMED_DESCRIPTOR
from .continuation import NOT_RESUMABLE as NOT_RESUMABLE
from .continuation import PARENT_UNAVAILABLE as PARENT_UNAVAILABLE
from .continuation import PERSISTENCE_UNAVAILABLE as PERSISTENCE_UNAVAILABLE
from .continuation import SUMMARY_MAX_CHARS as SUMMARY_MAX_CHARS
from .continuation import UNAUTHORIZED as UNAUTHORIZED
from .continuation import ChildIdentity as ChildIdentity
from .continuation import ContinuablePlan as ContinuablePlan
from .continuation import ContinuableStart as ContinuableStart
from .continuation import ContinuableTerms as ContinuableTerms
from .continuation import ListingSlot as ListingSlot
from .continuation import ResumeTerms as ResumeTerms
from .continuation import bound_summary as bound_summary
from .continuation import check_continuable as check_continuable
from .continuation import child_identity as child_identity
from .continuation import continuable_descriptor as continuable_descriptor
from .continuation import epoch_stop_reason as epoch_stop_reason
from .continuation import listing_slots as listing_slots
from .continuation import plan_continuable as plan_continuable
from .continuation import refusal as refusal
from .continuation import report_message as report_message
from .continuation import resume_terms as resume_terms
from .continuation import same_lifecycle as same_lifecycle
from .continuation import settlement_notice as settlement_notice
from .continuation import settlement_summary as settlement_summary
from .continuation import teardown_failure_text as teardown_failure_text
from .control import ASK_USER_QUESTION as ASK_USER_QUESTION
from .control import ASK_USER_QUESTION_DESCRIPTION as ASK_USER_QUESTION_DESCRIPTION
from .control import CONTINUABLE_SECTION_ORDER as CONTINUABLE_SECTION_ORDER
from .control import INTERRUPT_AGENT as INTERRUPT_AGENT
from .control import LIST_AGENTS as LIST_AGENTS
from .control import REPORT as REPORT
from .control import REPORT_SECTION_NAME as REPORT_SECTION_NAME
from .control import REPORT_SECTION_ORDER as REPORT_SECTION_ORDER
from .control import REPORT_SECTION_TEXT as REPORT_SECTION_TEXT
from .control import SEND_MESSAGE as SEND_MESSAGE
from .control import AgentListDiagnostic as AgentListDiagnostic
from .control import AgentListEntry as AgentListEntry
from .control import AgentStatus as AgentStatus
from .control import AnswerItem as AnswerItem
from .control import Answers as Answers
from .control import BackgroundValue as BackgroundValue
from .control import ContinuableValue as ContinuableValue
from .control import DiagnosticReason as DiagnosticReason
from .control import ForegroundValue as ForegroundValue
from .control import ListScope as ListScope
from .control import Question as Question
from .control import QuestionIntent as QuestionIntent
from .control import QuestionOption as QuestionOption
from .control import SubagentToolValue as SubagentToolValue
from .control import ask_user_question_schema as ask_user_question_schema
from .control import continuable_tool_section as continuable_tool_section
from .control import intent_refusal as intent_refusal
from .control import interrupt_agent_schema as interrupt_agent_schema
from .control import list_agents_schema as list_agents_schema
from .control import no_calling_agent as no_calling_agent
from .control import object_tool_schema as object_tool_schema
from .control import questions_from_arguments as questions_from_arguments
from .control import render_agent_list as render_agent_list
from .control import render_interrupt_requested as render_interrupt_requested
from .control import render_queued as render_queued
from .control import render_report_accepted as render_report_accepted
from .control import render_started as render_started
from .control import report_schema as report_schema
from .control import report_section as report_section
from .control import send_message_schema as send_message_schema
from .driver import Prompt as Prompt
from .driver import failure_of as failure_of
from .driver import merge_sections as merge_sections
from .driver import missing_route as missing_route
from .driver import pending_input as pending_input
from .driver import policy_sections as policy_sections
from .driver import queued_input as queued_input
from .driver import ranked_sections as ranked_sections
from .driver import retry_note as retry_note
from .driver import step_context as step_context
from .driver import step_header as step_header
from .driver import step_system_prompt as step_system_prompt
from .driver import turn_note as turn_note
from .driver import user_message as user_message
from .jobs import BACKGROUND_JOBS_UNAVAILABLE as BACKGROUND_JOBS_UNAVAILABLE
from .jobs import JOB_KILL as JOB_KILL
from .jobs import JOB_LIST as JOB_LIST
from .jobs import JOB_OUTPUT as JOB_OUTPUT
from .jobs import JOBS_SECTION as JOBS_SECTION
from .jobs import KILLED_REASON as KILLED_REASON
from .jobs import NO_JOB_CONTROLLER as NO_JOB_CONTROLLER
from .jobs import JobOutcome as JobOutcome
from .jobs import JobStatus as JobStatus
from .jobs import JobView as JobView
from .jobs import completion_notice as completion_notice
from .jobs import job_id as job_id
from .jobs import job_kill_schema as job_kill_schema
from .jobs import job_limit_reached as job_limit_reached
from .jobs import job_list_schema as job_list_schema
from .jobs import job_output_schema as job_output_schema
from .jobs import render_job_kill as render_job_kill
from .jobs import render_job_list as render_job_list
from .jobs import render_job_output as render_job_output
from .jobs import render_job_started as render_job_started
from .jobs import run_outcome as run_outcome
from .jobs import start_failure_outcome as start_failure_outcome
from .jobs import status_line as status_line
from .jobs import with_dispose_failure as with_dispose_failure
from .loop import DEFAULT_MAX_STEPS as DEFAULT_MAX_STEPS
from .loop import Backoff as Backoff
from .loop import BackoffDone as BackoffDone
from .loop import Begin as Begin
from .loop import CallModel as CallModel
from .loop import Cancelled as Cancelled
from .loop import CancelRequested as CancelRequested
from .loop import Chunk as Chunk
from .loop import Command as Command
from .loop import EndStream as EndStream
from .loop import Failed as Failed
from .loop import Followup as Followup
from .loop import LoopInput as LoopInput
from .loop import LoopProtocolError as LoopProtocolError
from .loop import LoopState as LoopState
from .loop import LoopStep as LoopStep
from .loop import PrepareStep as PrepareStep
from .loop import RunTools as RunTools
from .loop import Steer as Steer
from .loop import StepBlocked as StepBlocked
from .loop import StepPrepared as StepPrepared
from .loop import Stop as Stop
from .loop import StreamEnded as StreamEnded
from .loop import ToolDone as ToolDone
from .loop import TurnProgress as TurnProgress
from .loop import Wake as Wake
from .loop import feed as feed
from .loop import initial_loop_state as initial_loop_state
from .prompt import APPROVAL_POLICY_ORDER as APPROVAL_POLICY_ORDER
from .prompt import CLEARED_CONTEXT_TEXT as CLEARED_CONTEXT_TEXT
from .prompt import HARNESS_IDENTITY as HARNESS_IDENTITY
from .prompt import PROMPT_VARIABLES as PROMPT_VARIABLES
from .prompt import SANDBOX_POLICY_ORDER as SANDBOX_POLICY_ORDER
from .prompt import SNAPSHOT_HEADER as SNAPSHOT_HEADER
from .prompt import approval_policy_section as approval_policy_section
from .prompt import context_message as context_message
from .prompt import interpolate_prompt as interpolate_prompt
from .prompt import sandbox_policy_section as sandbox_policy_section
from .prompt import snapshot_text as snapshot_text

# Every name imported above. mypy reads no built __all__; `import X as X` is its re-export.
if not _TYPE_CHECKING:
    __all__ = [name for name, value in globals().items()
               if not name.startswith("_") and not isinstance(value, _ModuleType)]
