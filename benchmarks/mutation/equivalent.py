"""Mutants that cannot change behaviour, each with the reason.

Keyed by module (short name) and :attr:`Mutant.key <benchmarks.mutation.operators.Mutant.key>`
(``scope: `before` -> `after```, no line number, so the list survives edits around them; ``#n``
tells apart the same change made at the n-th place in one scope). A key listed here that a run
kills is reported as stale; one that no longer exists, too.
"""

from __future__ import annotations

__all__ = ["EQUIVALENT"]

EQUIVALENT: dict[str, dict[str, str]] = {
    "seed": {
        # `return self._prefix(max(stop, 0))`, reached only with step == 1
        "_PrefixSliced.__getitem__: `0` -> `-1 #2`":
            "with step 1, slice.indices clamps stop into 0..length, so max(stop, -1) is "
            "max(stop, 0): both are stop",
        # `len(other) == len(self) and all(... zip(self, other, strict=True))`
        "_SameItems.__eq__: `True` -> `False`":
            "zip's strict check fires only on sequences of different lengths, and the "
            "length comparison before it has already returned False for those",
    },
    "trace": {
        # `len(blocks) != 1 or not isinstance(blocks[0], ...) or blocks[0].tool_call_id != ...`
        "_Tracer._tool_result: `0` -> `-1`":
            "len(blocks) != 1 is tested first, so blocks[-1] is blocks[0]",
        "_Tracer._tool_result: `0` -> `-1 #2`":
            "len(blocks) != 1 is tested first, so blocks[-1] is blocks[0]",
        "_Tracer._tool_result: `0` -> `-1 #3`":
            "blocks holds exactly one block here (the shape rule above), so blocks[-1] is "
            "blocks[0]",
        # `(data.turn, data.step, data.message.id, data.message.source, block.tool_call_id, …)`
        "_without_result_content: `block.tool_call_id` -> `(entry dropped)`":
            "the shape rule, checked first, makes a result's block.tool_call_id its message "
            "source's callId, and the source is still compared",
        # `content[0]` of both results compared: the replacement's and the one it shadows
        "_without_result_content: `0` -> `-1`":
            "both results passed the shape rule on their way in (a replacement before the "
            "surface is touched, the shadowed one when it was folded), so each holds exactly "
            "one block and content[-1] is content[0]",
        # `if len(shadowed) != 1 or not isinstance(shadowed[0], ToolResultEvent)`
        "_tool_result_rewrite_problem: `0` -> `-1`":
            "the `or` reads shadowed[0] only when len(shadowed) == 1, where shadowed[-1] is "
            "shadowed[0]",
        # `old = shadowed[0]`, after that check
        "_tool_result_rewrite_problem: `0` -> `-1 #2`":
            "the check above returned unless shadowed holds exactly one event, so shadowed[-1] "
            "is shadowed[0]",
        # `if len(cited) > 1 and len(frozenset(cited)) != len(cited)`, inside `if cited:`
        "_Tracer._surface: `len(cited) > 1` -> `len(cited) >= 1`":
            "one cited seq cannot repeat: the set comparison it then reaches finds no repeat, "
            "so the answer is the same (the guard only saves building the set)",
        "_Tracer._surface: `1` -> `0`":
            "inside `if cited:` len(cited) > 0 always holds; one cited seq cannot repeat, so the "
            "set comparison it then reaches finds no repeat",
        # `def retained_context(self, restored_at: int = 0)`: `released >= restored_at`
        "Trace.retained_context: `0` -> `1`":
            "context_released_at is the seq of a replacement that succeeded, which shadows an "
            "earlier surface seq, so it is at least 1: `>= 0` and `>= 1` agree on it",
        "Trace.retained_context: `0` -> `-1`":
            "context_released_at is the seq of a replacement, never negative: `>= 0` and "
            "`>= -1` agree on it",
        # `blocks[0].text if len(blocks) == 1 and isinstance(blocks[0], TextBlock) else None`
        "_Tracer._user_message: `0` -> `-1`":
            "blocks[0] is read only once len(blocks) == 1 held, where blocks[-1] is blocks[0]",
        "_Tracer._user_message: `0` -> `-1 #2`":
            "blocks[0] is read only once len(blocks) == 1 held, where blocks[-1] is blocks[0]",
        # `self.keys = 0`: the first key of a fold's indexed surface
        "_LiveSurface.__init__: `0` -> `1`":
            "keys are only compared with each other (first.key > last.key) and never leave the "
            "fold: starting them at 1 keeps every comparison",
        "_LiveSurface.__init__: `0` -> `-1`":
            "keys are only compared with each other (first.key > last.key) and never leave the "
            "fold: starting them at -1 keeps every comparison",
        # `self.keys += 1` per appended link
        "_LiveSurface.append: `1` -> `2`":
            "keys still increase along the surface, and only their order is read "
            "(first.key > last.key)",
    },
    "codec": {
        # `if not projected: fast = _decode_fast(data) ...` in _decode_body
        "_decode_body: `not projected` -> `projected`":
            "the fast path only ever answers as the line-by-line path does (or gives up); "
            "skipping it, or trying it on projected records, which have no seq and always "
            "make it give up, leaves every answer the same",
        # `data[data.rfind(b"\n", 0, at) + 1:...]`, the line a -0 candidate sits on
        "_line_around: `0` -> `1`":
            "the line differs only by a leading newline when the data starts with one; its "
            "one reader, the fast path's -0 check, may then give up where it went on, and "
            "the line-by-line path gives the same answer",
        "<module>: `True` -> `False`":
            "the flags of the known-but-untyped records' classes (frozen, kw_only): each such "
            "record becomes an OpaqueEvent at once, never kept, hashed or built by keyword, and "
            "the classes add no fields of their own",
        "<module>: `True` -> `False #2`":
            "the flags of the known-but-untyped records' classes (frozen, kw_only): each such "
            "record becomes an OpaqueEvent at once, never kept, hashed or built by keyword, and "
            "the classes add no fields of their own",
        "_raw_problem: `return None` -> `pass`":
            "may_be_lossy misses no lossy text (tests/core/test_json_scan.py), so text it clears "
            "decodes and lossless_problem answers None too",
        "_lossless_line_problem: `return None` -> `pass`":
            "with no problem in the whole value there is none at the error path either, and the "
            "function goes on to return that None",
        "_complete_all: `False` -> `True`":
            "without packed rows the expansion loop rebuilds the same list of records",
        "_complete_all: `return records` -> `pass`":
            "without packed rows the expansion loop rebuilds the same list of records",
        "_decode_fast: `index + 1` -> `index - 1`":
            "the line number reaches only a DecodeError of the untyped lane, which the fast path "
            "discards (it gives up, and the line-by-line path names the line)",
        "_decode_fast: `1` -> `2 #3`":
            "the line number reaches only a DecodeError of the untyped lane, which the fast path "
            "discards (it gives up, and the line-by-line path names the line)",
        "_decode_fast: `1` -> `0 #3`":
            "the line number reaches only a DecodeError of the untyped lane, which the fast path "
            "discards (it gives up, and the line-by-line path names the line)",
        ('_line_around: `data.rfind(b"\\n", 0, at) + 1:len(data) if end == -1 else end`'
         " -> `data.rfind(b'\\n', 0, at) + 1:(len(data) if end == -1 else end) + 1`"):
            "the -0 check reads the candidate's line only to see whether its -0 lies outside "
            "strings; this slice still holds the candidate, starting where strings are balanced "
            "(every earlier line is whole JSON whenever the fast path's answer is kept), so the "
            "verdict is the same",
        ('_line_around: `data.rfind(b"\\n", 0, at) + 1:len(data) if end == -1 else end`'
         " -> `data.rfind(b'\\n', 0, at) + 1:(len(data) if end == -1 else end) - 1`"):
            "the line's last byte is dropped: a decodable record's line ends with `}` (or white "
            "space), never with the -0 found or inside a string",
        "_line_around: `0` -> `-1`":
            "rfind from -1 (the last byte) up to the candidate finds nothing, so the slice starts"
            " at the file's start: the -0 check reads the candidate's line only to see whether "
            "its -0 lies outside strings; this slice still holds the candidate, starting where "
            "strings are balanced (every earlier line is whole JSON whenever the fast path's "
            "answer is kept), so the verdict is the same",
        "_line_around: `1` -> `2`":
            "the slice skips the line's first byte, a record's `{` (or white space): the -0 check"
            " reads the candidate's line only to see whether its -0 lies outside strings; this "
            "slice still holds the candidate, starting where strings are balanced (every earlier "
            "line is whole JSON whenever the fast path's answer is kept), so the verdict is the "
            "same",
        "_line_around: `end == -1` -> `not (end == -1)`":
            "end is -1 only for a last line without a newline: the swapped branch slices to the "
            "end of the file (later lines only add -0s of their own, which make the fast path "
            "give up for the line-by-line path) or drops the line's last byte, a `}`",
        "_line_around: `end == -1` -> `end != -1`":
            "end is -1 only for a last line without a newline: the swapped branch slices to the "
            "end of the file (later lines only add -0s of their own, which make the fast path "
            "give up for the line-by-line path) or drops the line's last byte, a `}`",
        "_line_around: `1` -> `2 #2`":
            "end is never -2: the slice always ends at end, which for a last line without a "
            "newline (-1) drops its last byte, a `}`",
        "_line_around: `1` -> `0 #2`":
            "end is never 0 (it is found at or after the candidate, which follows a byte): the "
            "slice always ends at end, which for a last line without a newline (-1) drops its "
            "last byte, a `}`",
        "<module>: `2` -> `1`":
            "a line nested deeper than the limit that decodes as a record holds 2·(limit + 1) "
            "brackets and its envelope (type, seq, time, data: over 30 bytes), so a threshold a "
            "few bytes higher, or any lower, still checks every such line; a shorter deep line "
            "does not decode, and the fast path gives up on it",
        "<module>: `MAX_JSON_DEPTH + 1` -> `MAX_JSON_DEPTH - 1`":
            "a line nested deeper than the limit that decodes as a record holds 2·(limit + 1) "
            "brackets and its envelope (type, seq, time, data: over 30 bytes), so a threshold a "
            "few bytes higher, or any lower, still checks every such line; a shorter deep line "
            "does not decode, and the fast path gives up on it",
        "<module>: `1` -> `2 #3`":
            "a line nested deeper than the limit that decodes as a record holds 2·(limit + 1) "
            "brackets and its envelope (type, seq, time, data: over 30 bytes), so a threshold a "
            "few bytes higher, or any lower, still checks every such line; a shorter deep line "
            "does not decode, and the fast path gives up on it",
        "<module>: `1` -> `0 #3`":
            "a line nested deeper than the limit that decodes as a record holds 2·(limit + 1) "
            "brackets and its envelope (type, seq, time, data: over 30 bytes), so a threshold a "
            "few bytes higher, or any lower, still checks every such line; a shorter deep line "
            "does not decode, and the fast path gives up on it",
        "_has_deep_line: `len(line) >= limit` -> `len(line) > limit`":
            "a line nested deeper than the limit that decodes as a record holds 2·(limit + 1) "
            "brackets and its envelope (type, seq, time, data: over 30 bytes), so a threshold a "
            "few bytes higher, or any lower, still checks every such line; a shorter deep line "
            "does not decode, and the fast path gives up on it",
        "_decode_body: `return Success(fast)` -> `pass`":
            "the line-by-line path then reads the same text and gives the same answer (the fast "
            "path's own property, tests/core/test_codec_fast_path.py)",
        "_value_at: `return _NOWHERE` -> `return None`":
            "its one caller checks lossless_problem of what the path leads to, which is None "
            "for None as for nowhere: either way the problem is named without a location",
        "decode_header_line: `peek.version > SESSION_FORMAT_VERSION` -> `peek.version >= "
        "SESSION_FORMAT_VERSION`":
            "reached only when the version differs from SESSION_FORMAT_VERSION, where > and >= "
            "agree",
        "check_event: `1` -> `2`":
            "the line number given to _decode_line reaches only DecodeError.line, which "
            "check_event drops (it keeps the problem, whose text never holds a line number)",
        "check_event: `1` -> `0`":
            "the line number given to _decode_line reaches only DecodeError.line, which "
            "check_event drops (it keeps the problem, whose text never holds a line number)",
        "check_event: `0` -> `-1`":
            "len(decoded) != 1 has returned just above, so decoded[-1] is decoded[0]",
        "_decode_line: `return record` -> `pass`":
            "a descriptor the typed decoder read has the opaque envelope's fields and "
            "constraints and typed, lossless data, so reading its line again as an "
            "opaque event cannot fail: this return is never reached",
        "_decode_line: `return record` -> `return None`":
            "a descriptor the typed decoder read has the opaque envelope's fields and "
            "constraints and typed, lossless data, so reading its line again as an "
            "opaque event cannot fail: this return is never reached",
        ('_line_around: `data.rfind(b"\\n", 0, at) + 1:len(data) if end == -1 else end`'
         " -> `data.rfind(b'\\n', 0, at) + 1 + 1:len(data) if end == -1 else end`"):
            "the slice skips the line's first byte, a record's `{` (or white space), as with "
            "`1` -> `2`: the candidate is still in it, strings balanced at its start",
    },
    "closers": {
        # `if turn is None: return ()` at the top of closing_events
        "closing_events: `return ()` -> `pass`":
            "with no open turn a trace has no pending call and its phase is IDLE, whose "
            "closing walk is empty: the rest of the function returns () as well",
    },
    "formats.common": {
        # read_items: the one-call conversion of the whole list, then a slow path that converts
        # item by item with from_attributes=True and returns the views when every item reads
        "read_items: `True` -> `False`":
            "objects then fail the one-call conversion, and the slow path reads each of them "
            "with from_attributes=True into the same views: only slower",
        "read_items: `return items, None` -> `pass`":
            "the slow path then converts each item of a list that has just converted whole, "
            "and returns the same views and no violation: only slower",
        # `return tuple(good), None` after the slow path's loop
        "read_items: `return tuple(good), None` -> `return None`":
            "never runs: the slow path runs only when converting the whole list failed, so one "
            "item fails converting alone (the same type and flags) and the loop returns there",
        "read_items: `tuple(good)` -> `(entry dropped) #2`":
            "never runs: the slow path runs only when converting the whole list failed, so one "
            "item fails converting alone (the same type and flags) and the loop returns there",
        "read_items: `None` -> `(entry dropped) #2`":
            "never runs: the slow path runs only when converting the whole list failed, so one "
            "item fails converting alone (the same type and flags) and the loop returns there",
        # `strict: bool = False` in read_history's signature
        "read_history: `False` -> `True`":
            "the default is never used: its only callers, the three formats' decode_history, "
            "always pass strict=, and the function is not on the formats front door",
    },
    "formats.openai_chat": {
        # `_JSON_TYPES = ((str, "a string"), ...)`, read by _json_type
        "<module>: `(str, \"a string\")` -> `(entry dropped)`":
            "_json_type is called only for arguments that are not a string (the strict check "
            "tests isinstance(arguments, str) first), so the str entry never matches",
        # the _fold's starting state
        "_fold: `1` -> `2`":
            "calls_at (-1 -> -2) is read only while waiting holds calls, and waiting is filled "
            "only together with calls_at = index",
        "_fold: `1` -> `0`":
            "calls_at (-1 -> 0) is read only while waiting holds calls, and waiting is filled "
            "only together with calls_at = index",
        "_fold: `1` -> `2 #2`":
            "legacy_at (-1 -> -2) is only tested with legacy_at >= 0, false for both",
        "_fold: `1` -> `2 #3`":
            "legacy_at (-1 -> -2, after a message that is not the assistant's) is only tested "
            "with legacy_at >= 0, false for both",
        "_fold: `False` -> `True`":
            "a step open before the first message: an assistant one keeps step_calls False as "
            "a new step would, any other closes it with cut = 0 (already 0), and an empty or "
            "at-once unreadable history sets cut to length 0",
        "_fold: `False` -> `True #2`":
            "step_calls is read only while in_step, and every step starts by setting it False",
    },
    "formats.openai_responses": {
        # `_MODEL_SIDE = frozenset({"reasoning", ...})`, read by _class_of's last test
        "<module>: `\"reasoning\"` -> `(entry dropped)`":
            "_class_of answers _REASONING for a reasoning item before it reads _MODEL_SIDE, "
            "its only reader",
        # the _fold's starting state
        "_fold: `False` -> `True`":
            "a step open before the first item: an output item keeps step_calls False as a "
            "new step would, any other closes it with cut = 0 (already 0; reasoning_at and "
            "waiting are empty), and an empty or at-once unreadable history sets cut to 0",
        "_fold: `False` -> `True #2`":
            "step_calls is read only while in_step, and every step starts by setting it False",
        # `waiting[call_id] = (...); step_calls = True` for a client call
        "_fold: `True` -> `False #3`":
            "the call waits in `waiting` until its output, which is not of the model's side and "
            "so closes the step before it is popped; each reading of step_calls also requires "
            "an empty `waiting`",
        # `approvals[item.id or ""] = index; step_calls = True` for an mcp_approval_request
        "_fold: `True` -> `False #2`":
            "the request waits in `approvals` until its response, an input item that closes "
            "the step before it is popped; each reading of step_calls also requires an empty "
            "`approvals`",
    },
    "formats.anthropic": {
        # the fold's starting state, in _Fold.__init__
        "_Fold.__init__: `1` -> `2`":
            "calls_at (-1 -> -2) is read only while calls holds tool uses, and calls is filled "
            "only together with calls_at = index",
        "_Fold.__init__: `1` -> `0`":
            "calls_at (-1 -> 0) is read only while calls holds tool uses, and calls is filled "
            "only together with calls_at = index",
        "_Fold.__init__: `False` -> `True`":
            "a step open before the first message: an assistant one finds step_calls False and "
            "no server call as a new step would, any other closes it with cut = 0 (already "
            "0), and an empty or at-once unreadable history stops with cut 0 and no call",
        "_Fold.__init__: `False` -> `True #2`":
            "step_calls is read only while in_step, and every step starts by setting it False",
        "_Fold.__init__: `False` -> `True #4`":
            "loop_open is read only by end(), and every message the fold goes past sets it "
            "(False in assistant(), False or True in user()); with no message turn_start is "
            "None and the thinking check is skipped",
        # `self.loop_open = False` at the end of assistant()
        "_Fold.assistant: `False` -> `True #2`":
            "after an assistant message the step is open: end() returns before it reads "
            "loop_open, and the next message sets it again (or stops the fold)",
        # `self.turn_start, self.loop_open = None, False; return None` in user(), no calls open
        "_Fold.user: `False` -> `True #2`":
            "turn_start is set to None beside it, and the thinking check needs a turn_start; "
            "the next assistant message sets both again",
        "_Fold.user: `return None` -> `pass`":
            "with no call open and no result the rest of user() finds nothing missing and no "
            "result to count, and only sets loop_open True beside turn_start None: the "
            "thinking check needs a turn_start, and the next assistant message resets both",
    },
    "grammar": {
        # `while frontier and Phase.IDLE not in paths:` in the breadth-first search
        "_walk: `frontier and Phase.IDLE not in paths` -> `frontier or Phase.IDLE not in paths`":
            "searching on once IDLE is reached only adds phases not reached yet, so IDLE's "
            "path stays as found (and the search still ends: the frontier empties)",
    },
}
