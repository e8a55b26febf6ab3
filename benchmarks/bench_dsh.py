"""DSH's own fork start, side by side with ours: ``python -m benchmarks --dsh PATH``.

Optional: it runs only when given ``--dsh PATH``, a DSH checkout the user prepared themselves
(cloned, ``pnpm install`` run in it; BENCHMARKS.md says how). Nothing of DSH is in this
repository, and nothing here builds DSH: this module writes a small vitest spec of our own into
a temporary folder inside the checkout (removed afterwards) and runs it with the checkout's
vitest (``pnpm exec vitest run``), which runs DSH's TypeScript directly. The spec builds a DSH
parent the way DSH's fork measurement did (its agent loop, its mock adapter, an ``echo`` tool;
K completed turns of one tool call and the text ``ok``, turn K+1 hanging), then times
``ctx.subagents.start("fork", …)`` to publication and to ``run.result`` with
``performance.now()`` and ``process.cpuUsage()``, once with DSH's invariant checks mounted (as
in its fork spec) and once without. Ours is timed in the same run, before and after DSH, on the
shell-built parents of the other fork benchmarks (samples pooled).

Missing node (or one older than DSH's ``engines``), pnpm, the checkout, its ``node_modules`` or
a file the spec imports: the section says which, and nothing runs.
"""

from __future__ import annotations

import gc
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .harness import Row, Section, Settings, Timing
from .workloads import CHILD_OWN_EVENTS, ShellParent, child_request, shell_workbench

__all__ = ["NAME", "TITLE", "SPEC", "problem", "run"]

NAME = "dsh"
TITLE = "DSH's own fork start (its TypeScript, node + vitest) side by side with ours"

#: The node versions DSH's package.json accepts (``engines``: ^22.19.0 || >=24.0.0).
_NODE_OK = ((22, 19), (24, 0))
#: Files of the checkout the spec imports or runs from: their absence means another DSH.
_NEEDED = (
    "package.json",
    "tsconfig.base.json",
    "vitest.shared.ts",
    "packages/core/agent-loop/tests/mock-adapter.ts",
    "packages/subagent/subagent-fork-in-process/src/index.ts",
    "node_modules/.bin/vitest",
)

#: Our vitest spec (TypeScript), run inside the checkout. Settings come from the environment.
SPEC = r"""// turnfork's side-by-side benchmark of DSH's own fork start. Written by
// `python -m benchmarks --dsh PATH` into a temporary folder of the checkout; removed after.
import { writeFileSync } from 'node:fs'
import { it } from 'vitest'
import { Context } from '@deepseek-ai/cordis'
import { CallId, createUserMessage, type StreamChunk } from '@deepseek-ai/dsh-llm'
import { SessionId } from '@deepseek-ai/dsh-session'
import AgentLoop from '@deepseek-ai/dsh-agent-loop'
import { mountAgentLoopTestDependencies } from '@deepseek-ai/dsh-agent-loop-testkit'
import InvariantRegistry from '@deepseek-ai/dsh-invariants'
import * as SessionInvariant from '@deepseek-ai/dsh-session/invariant'
import * as AgentInvariant from '@deepseek-ai/dsh-agent/invariant'
import * as AgentLoopInvariant from '@deepseek-ai/dsh-agent-loop/invariant'
import SubagentRuntime from '@deepseek-ai/dsh-subagent'
import { defineContentToolFixture } from '@deepseek-ai/dsh-tools'
import * as fork from '@deepseek-ai/dsh-subagent-fork-in-process'
import { MockAdapter } from '../packages/core/agent-loop/tests/mock-adapter.ts'

const settings = JSON.parse(process.env.TURNFORK_DSH_SETTINGS ?? '{}') as {
  sizes: number[], rounds: number, invariants: boolean, output: string }

function usage(input: number, output: number): StreamChunk {
  return { type: 'usage', usage: { inputTokens: input, outputTokens: output } }
}

/** One echo call: block-start, block-end, usage, finish (a parent turn's first step). */
function call(index: number): StreamChunk[] {
  const block = { type: 'tool-call' as const, id: CallId(`call-${index}`), name: 'echo',
                  arguments: JSON.stringify({ text: `payload-${index}` }) }
  return [{ type: 'block-start', index: 0, blockType: 'tool-call' },
          { type: 'block-end', index: 0, block }, usage(10, 5),
          { type: 'finish', reason: { kind: 'tool-calls' } }]
}

/** The text "ok", one character per text-delta (a parent turn's second step). */
function ok(): StreamChunk[] {
  return [{ type: 'block-start', index: 0, blockType: 'text' },
          { type: 'text-delta', index: 0, text: 'o' }, { type: 'text-delta', index: 0, text: 'k' },
          { type: 'block-end', index: 0, block: { type: 'text', text: 'ok' } }, usage(10, 2),
          { type: 'finish', reason: { kind: 'stop' } }]
}

function user(text: string) {
  return createUserMessage({ content: [{ type: 'text', text }], source: { kind: 'user' } })
}

async function parentOf(turns: number, forks: number) {
  const script: ConstructorParameters<typeof MockAdapter>[0] = []
  for (let i = 0; i < turns; i++) script.push(call(i), ok())
  script.push('hang')
  for (let i = 0; i < forks; i++) script.push(call(1_000_000 + i), ok())
  const ctx = new Context()
  await mountAgentLoopTestDependencies(ctx)
  if (settings.invariants) {
    await ctx.plugin(InvariantRegistry)
    await ctx.plugin(SessionInvariant)
    await ctx.plugin(AgentInvariant)
    await ctx.plugin(AgentLoopInvariant)
  }
  await ctx.plugin(AgentLoop, { agents: [] })
  await ctx.plugin(SubagentRuntime)
  await ctx.plugin(fork, { providerName: 'fork' })
  ctx.tools.register(defineContentToolFixture({
    name: 'echo', description: 'echo the given text',
    parameters: { text: { type: 'string', required: true } },
    isConcurrencySafe: () => true,
    async execute(args) { return [{ type: 'text', text: `echo:${args.text}` }] },
  }))
  ctx.llm.registerAdapter(['mock'], new MockAdapter(script))
  const parent = ctx.agentLoop.create(SessionId(`parent-${turns}`),
                                      { provider: 'mock', model: 'mock' })
  const built = performance.now()
  for (let i = 0; i < turns; i++) {
    parent.followup(user(`user turn ${i}`))
    await parent.whenIdle()
  }
  const buildMs = performance.now() - built
  const cut = parent.session.events.length
  parent.followup(user('in-flight parent turn'))
  for (let i = 0; i < 1000 && parent.session.events.length < cut + 7; i++) {
    await new Promise(resolve => setTimeout(resolve, 0))
  }
  if (parent.session.events.length !== cut + 7) throw new Error('the parent is not mid-turn')
  return { ctx, parent, cut, buildMs }
}

function cpuMicros(): number {
  const used = process.cpuUsage()
  return used.user + used.system
}

it('times DSH fork start at each K', async () => {
  const out: Record<string, unknown> = {
    node: process.version, invariants: settings.invariants, sizes: {} }
  for (const turns of settings.sizes) {
    const { ctx, parent, cut, buildMs } = await parentOf(turns, settings.rounds + 1)
    const published: number[] = [], publishedCpu: number[] = []
    const done: number[] = [], doneCpu: number[] = []
    let seedLength = -1, ownEvents = -1, stop = ''
    for (let round = 0; round <= settings.rounds; round++) {
      const cpu0 = cpuMicros(), t0 = performance.now()
      const run = await ctx.subagents.start('fork', {
        prompt: [{ type: 'text', text: 'child task' }], parent,
        signal: new AbortController().signal })
      const t1 = performance.now(), cpu1 = cpuMicros()
      const result = await run.result
      const t2 = performance.now(), cpu2 = cpuMicros()
      const child = ctx.agents.get(run.id)!
      seedLength = child.session.header.seedLength ?? -1
      ownEvents = child.session.events.length - seedLength
      stop = result.stopReason
      await run.dispose()
      if (round === 0) continue  // the first fork also compiles the code it runs
      published.push((t1 - t0) * 1e6); publishedCpu.push((cpu1 - cpu0) * 1e3)
      done.push((t2 - t0) * 1e6); doneCpu.push((cpu2 - cpu0) * 1e3)
    }
    ;(out.sizes as Record<string, unknown>)[String(turns)] = {
      events: parent.session.events.length, cut, seedLength, ownEvents, stop, buildMs,
      publishedNs: published, publishedCpuNs: publishedCpu, doneNs: done, doneCpuNs: doneCpu }
    await ctx.dispose?.()
  }
  writeFileSync(settings.output, JSON.stringify(out))
}, 1_800_000)
"""

#: The vitest config for the spec: DSH's own resolution (its tsconfig paths facade, its
#: decorator transform), nothing else of its test setup.
_CONFIG = """import tsconfigPaths from 'vite-tsconfig-paths'
import { defineConfig } from 'vitest/config'
import { standardDecoratorPlugin } from '../vitest.shared.ts'

export default defineConfig({
  plugins: [tsconfigPaths({ projects: ['../tsconfig.base.json'] }), standardDecoratorPlugin()],
  test: { include: ['*.bench.spec.ts'], pool: 'forks', testTimeout: 1_800_000 },
})
"""


def _node_version(node: str) -> tuple[int, int] | None:
    try:
        done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.match(r"v(\d+)\.(\d+)", done.stdout.strip())
    return (int(found[1]), int(found[2])) if found else None


def problem(checkout: Path | None) -> str | None:
    """Why the benchmark cannot run with ``checkout`` here (``None``: it can)."""
    if checkout is None:
        return "no DSH checkout given: pass --dsh PATH (see BENCHMARKS.md, 'DSH side by side')"
    if not checkout.is_dir():
        return f"{checkout} is not a folder"
    try:
        name = json.loads((checkout / "package.json").read_text(encoding="utf-8")).get("name")
    except (OSError, ValueError, AttributeError):
        name = None
    if name != "@deepseek-ai/dsh-root":
        return f"{checkout} is not a DSH checkout (its package.json is not @deepseek-ai/dsh-root)"
    if not (checkout / "node_modules").is_dir():
        return f"{checkout} has no node_modules: run `pnpm install` in it first"
    missing = [path for path in _NEEDED if not (checkout / path).exists()]
    if missing:
        return (f"{checkout} lacks {', '.join(missing)}: not the DSH this benchmark knows "
                "(release 0.1.1-rc.2), or not fully installed")
    node = shutil.which("node")
    if node is None:
        return "node is not on PATH (DSH needs node ^22.19 or >= 24)"
    version = _node_version(node)
    accepted = version is not None and (
        (version[0] == _NODE_OK[0][0] and version >= _NODE_OK[0]) or version >= _NODE_OK[1])
    if not accepted:
        shown = "of unknown version" if version is None else f"{version[0]}.{version[1]}"
        return f"node {shown} at {node} is not one DSH accepts (^22.19 or >= 24)"
    if shutil.which("pnpm") is None:
        return "pnpm is not on PATH (npm i -g pnpm)"
    return None


def _run_dsh(checkout: Path, sizes: Sequence[int], rounds: int, invariants: bool,
             ) -> dict[str, Any]:
    """Run our spec in ``checkout`` once; DSH's figures as the spec wrote them."""
    folder = Path(tempfile.mkdtemp(prefix=".turnfork-bench-", dir=checkout))
    try:
        (folder / "fork.bench.spec.ts").write_text(SPEC, encoding="utf-8")
        (folder / "vitest.config.ts").write_text(_CONFIG, encoding="utf-8")
        output = folder / "figures.json"
        settings = {"sizes": list(sizes), "rounds": rounds, "invariants": invariants,
                    "output": str(output)}
        env = {**_environment(), "TURNFORK_DSH_SETTINGS": json.dumps(settings)}
        done = subprocess.run(
            ["pnpm", "exec", "vitest", "run", "--config", str(folder / "vitest.config.ts"),
             "--root", str(folder)],
            cwd=checkout, env=env, capture_output=True, text=True, timeout=3600, check=False)
        if done.returncode != 0 or not output.exists():
            raise RuntimeError(f"DSH's vitest run failed ({done.returncode}):\n"
                               f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}")
        figures: dict[str, Any] = json.loads(output.read_text(encoding="utf-8"))
        return figures
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("CI", "1")  # vitest: no watch mode, no interactive output
    return env


async def _ours(parents: Sequence[ShellParent], rounds: int,
                ) -> dict[int, list[tuple[float, float, float, float]]]:
    """(published wall, published CPU, result wall, result CPU) ns per sample, per K; rounds
    interleaved over the parents, order rotating, ``gc.collect()`` before every sample."""
    samples: dict[int, list[tuple[float, float, float, float]]] = {
        p.completed_turns: [] for p in parents}
    request = child_request()
    for round_no in range(rounds + 1):
        shift = round_no % len(parents)
        for parent in (*parents[shift:], *parents[:shift]):
            gc.collect()
            runtime = parent.host.subagents
            cpu0, t0 = time.thread_time_ns(), time.perf_counter_ns()
            run = await runtime.start("fork", request, parent=parent.agent)
            t1, cpu1 = time.perf_counter_ns(), time.thread_time_ns()
            result = await run.result
            t2, cpu2 = time.perf_counter_ns(), time.thread_time_ns()
            assert result.stop_reason == "completed" and len(run.own_events()) == CHILD_OWN_EVENTS
            await run.dispose()
            if round_no:  # the first round warms up, as in DSH's spec
                samples[parent.completed_turns].append((t1 - t0, cpu1 - cpu0, t2 - t0,
                                                        cpu2 - cpu0))
    return samples


def _timing(name: str, walls: Sequence[float], cpus: Sequence[float]) -> Timing:
    return Timing(name=name, inner=1, gc="on", samples_ns=tuple(walls),
                  cpu_samples_ns=tuple(cpus))


def run(settings: Settings) -> Section:
    checkout = settings.dsh
    why = problem(checkout)
    if why is not None or checkout is None:
        return Section(name=NAME, title=TITLE, notes=(), rows=(), unavailable=why)
    sizes = (10, 100) if settings.quick else (10, 100, 1000)
    rounds = settings.rounds(full=11, quick=3)
    bench = shell_workbench()
    parents = [bench.parent(k) for k in sizes]
    for parent in parents:
        parent.use_child_model(2 * (rounds + 1) + 2, record_requests=False)
    before = bench.run(_ours(parents, rounds))
    dsh = {invariants: _run_dsh(checkout, sizes, rounds, invariants)
           for invariants in (True, False)}
    after = bench.run(_ours(parents, rounds))
    timings: dict[str, dict[str, Timing]] = {}
    rows: list[Row] = []
    for parent in parents:
        k = parent.completed_turns
        ours = before[k] + after[k]
        mine = {"published": _timing(f"ours K={k}: published", [s[0] for s in ours],
                                     [s[1] for s in ours]),
                "result": _timing(f"ours K={k}: result", [s[2] for s in ours],
                                  [s[3] for s in ours])}
        theirs: dict[str, Timing] = {}
        for invariants, figures in dsh.items():
            label = "checks on" if invariants else "checks off"
            at_k = figures["sizes"][str(k)]
            assert at_k["seedLength"] == at_k["cut"] and at_k["stop"] == "completed", at_k
            assert at_k["ownEvents"] == CHILD_OWN_EVENTS, at_k
            theirs[f"{label} published"] = _timing(f"DSH {label} K={k}: published",
                                                   at_k["publishedNs"], at_k["publishedCpuNs"])
            theirs[f"{label} result"] = _timing(f"DSH {label} K={k}: result", at_k["doneNs"],
                                                at_k["doneCpuNs"])
        timings[f"K={k}"] = {**{t.name: t for t in mine.values()},
                             **{t.name: t for t in theirs.values()}}
        events = dsh[True]["sizes"][str(k)]["events"]
        rows += [
            Row.time(f"K={k}: DSH, checks on ({events:,} events): start -> published",
                     theirs["checks on published"]),
            Row.time(f"K={k}: DSH, checks off: start -> published",
                     theirs["checks off published"]),
            Row.time(f"K={k}: ours ({parent.events:,} events): start -> published",
                     mine["published"]),
            Row.ratio(f"K={k}: DSH checks on / ours, start -> published",
                      theirs["checks on published"], mine["published"]),
            Row.ratio(f"K={k}: DSH checks off / ours, start -> published",
                      theirs["checks off published"], mine["published"]),
            Row.time(f"K={k}: DSH, checks on: start -> result", theirs["checks on result"]),
            Row.time(f"K={k}: ours: start -> result", mine["result"]),
            Row.ratio(f"K={k}: DSH checks on / ours, start -> result",
                      theirs["checks on result"], mine["result"]),
        ]
    first, last = f"K={sizes[0]}", f"K={sizes[-1]}"
    rows += [
        Row.ratio(f"flatness, DSH checks on: {last} / {first} (start -> published)",
                  timings[last][f"DSH checks on {last}: published"],
                  timings[first][f"DSH checks on {first}: published"]),
        Row.ratio(f"flatness, ours: {last} / {first} (start -> published)",
                  timings[last][f"ours {last}: published"],
                  timings[first][f"ours {first}: published"]),
    ]
    builds = {f"K={k}": {("checks on" if inv else "checks off"): round(
        figures["sizes"][str(k)]["buildMs"]) for inv, figures in dsh.items()} for k in sizes}
    notes = (
        f"DSH: node {dsh[True]['node']}, {checkout}; vitest runs its TypeScript; our spec "
        f"times {rounds} forks per K after one warm-up fork, wall = performance.now(), cpu = "
        "process.cpuUsage() (user + system, all of node's threads); checks on = DSH's session, "
        "agent and agent-loop invariant companions mounted, as in its fork spec",
        f"ours: {rounds} rounds before and {rounds} after DSH's runs, pooled, interleaved over "
        "K, gc.collect() before every sample (cpu = this thread's CPU time); parents built by "
        "the shell (one more tool-call-delta chunk per turn than DSH's)",
        "DSH's parent build, ms: " + "; ".join(
            f"{k} {v['checks on']} (checks on) / {v['checks off']} (off)"
            for k, v in builds.items()),
    )
    return Section(name=NAME, title=TITLE, notes=notes, rows=tuple(rows), timings=timings,
                   params={"checkout": str(checkout), "sizes": list(sizes), "rounds": rounds,
                           "dsh": {("checks on" if inv else "checks off"): figures
                                   for inv, figures in dsh.items()}})
