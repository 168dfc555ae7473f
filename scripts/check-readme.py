#!/usr/bin/env python3
"""Runs every fenced code block of every README, as a newcomer would.

Every README.md that git tracks is read, and each fenced block is run by
the language of its info string:

  rust    a complete program: built as an example of a temporary crate that
          depends on raft-core by path (outside the workspace, sharing its
          target directory) with warnings denied, then run.
  c       a complete program: compiled with the strict flags of the
          Makefile and ASan+UBSan against target/release/libraftlet.a, then
          run with leak detection.
  python  a complete script: run with warnings as errors by the interpreter
          of the fresh venv that scripts/python-test.sh makes (the wheel
          installed, nothing else).
  go      a complete `package main`: vetted and run from a module of its own
          outside the checkout (a replace directive points at bindings/go),
          linking the checkout's static library (-tags raftlet_intree).
  sh      run by `bash -euo pipefail` from the repository root, with HOME a
          fresh directory (the toolchains' caches keep their real places),
          so `make install PREFIX=$HOME/.local` and `cd ~/hello` install and
          build into a throwaway home, outside the checkout.
  text    shown output, nothing to run.

Two attributes may follow the language:

  file=PATH   also save the block as PATH (`~/` is the throwaway home) before
              the README's sh blocks run, so that they can build it the way
              the README tells the reader to.
  no-run      do not run it. Only the blocks listed in NO_RUN below may say
              so, each with the reason; a no-run block missing there, or an
              entry there that matches no block, fails the check.

A block without a language, or with another one, fails the check: every
block must say how it is meant to be run. The blocks of one README run in
order; all of them run even after a failure, and the check fails if any did.

Usage: scripts/check-readme.py [--only LANG[,LANG...]] [--python PYTHON] [README ...]
Environment: CC, CFLAGS_STRICT, SANITIZE, CLIBS (default to the Makefile's),
CARGO, README_PYTHON (the interpreter for python blocks).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Blocks that are shown but not run: (README, first line of the block) -> why.
NO_RUN = {
    ("README.md", "make demo"): (
        "the set-up commands: `make test` would run this check again, inside itself; "
        "`make demo` runs in make test through scripts/go-test.sh (test-go)"
    ),
    ("tests/sim/README.md", "make sim-test          # the fixed seed set + planted-bug tests (part of make test)"): (
        "`make sim-test` is already a prerequisite of make test, and `make chaos` "
        "runs 20000 seeds and `make soak` 44000 (tens of minutes on 2 cores)"
    ),
}

LANGS = ("rust", "c", "python", "go", "sh", "text")
ALIASES = {"bash": "sh", "shell": "sh", "console": "sh", "py": "python", "golang": "go"}
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass
class Block:
    readme: str
    line: int
    lang: str
    attrs: dict[str, str]
    code: str

    @property
    def where(self) -> str:
        return f"{self.readme}:{self.line}"

    @property
    def first_line(self) -> str:
        return self.code.splitlines()[0] if self.code.strip() else ""


@dataclass
class Result:
    failures: list[str] = field(default_factory=list)
    ran: int = 0
    shown: int = 0


def readmes() -> list[str]:
    """Every README.md git tracks (or, outside git, every one on disk)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--", "README.md", "*/README.md"],
            cwd=ROOT, check=True, capture_output=True, text=True,
        ).stdout
        found = sorted(set(out.split()))
    except (OSError, subprocess.CalledProcessError):
        found = sorted(
            str(p.relative_to(ROOT)) for p in ROOT.rglob("README.md")
            if not {"target", "build", ".git"} & set(p.relative_to(ROOT).parts)
        )
    return found


def parse(readme: str) -> list[Block]:
    """The fenced blocks of a README (CommonMark fences, not indented code)."""
    blocks: list[Block] = []
    lines = (ROOT / readme).read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, start = m.group("fence"), m.group("info").strip(), i + 1
        body: list[str] = []
        i += 1
        while i < len(lines):
            close = FENCE.match(lines[i])
            if close and close.group("fence")[0] == fence[0] and len(close.group("fence")) >= len(fence) \
                    and not close.group("info").strip():
                break
            body.append(lines[i])
            i += 1
        else:
            raise SystemExit(f"{readme}:{start}: the code block is never closed")
        i += 1
        words = info.split()
        lang = ALIASES.get(words[0], words[0]) if words else ""
        attrs: dict[str, str] = {}
        for w in words[1:]:
            k, _, v = w.partition("=")
            attrs[k] = v
        blocks.append(Block(readme, start, lang, attrs, "\n".join(body) + "\n"))
    return blocks


def tool_env(home: Path) -> dict[str, str]:
    """The environment of sh blocks: HOME is `home`; cargo, rustup, Go and
    pip keep their real homes and caches."""
    env = dict(os.environ)
    real = Path.home()
    env.setdefault("CARGO_HOME", str(real / ".cargo"))
    env.setdefault("RUSTUP_HOME", str(real / ".rustup"))
    env.setdefault("PIP_CACHE_DIR", str(real / ".cache" / "pip"))
    if shutil.which("go"):
        for var in ("GOPATH", "GOMODCACHE", "GOCACHE", "GOENV"):
            if var not in env:
                val = subprocess.run(["go", "env", var], capture_output=True, text=True).stdout.strip()
                if val:
                    env[var] = val
    env["HOME"] = str(home)
    env.pop("PKG_CONFIG_PATH", None)
    env.pop("LD_LIBRARY_PATH", None)
    return env


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 900) -> tuple[bool, str]:
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, f"timed out after {timeout}s: {shlex.join(cmd)}"
    out = (p.stdout + p.stderr).strip()
    return p.returncode == 0, (f"exit {p.returncode}: {shlex.join(cmd)}\n{out}" if p.returncode else out)


class Runner:
    def __init__(self, work: Path, python: str | None) -> None:
        self.work = work
        self.python = python
        self.cargo = os.environ.get("CARGO", "cargo")
        self.rust_blocks: list[Block] = []
        self.home_for: dict[str, Path] = {}

    def home(self, readme: str) -> Path:
        """The throwaway home of one README's blocks."""
        if readme not in self.home_for:
            h = Path(tempfile.mkdtemp(prefix="home-", dir=self.work))
            self.home_for[readme] = h
        return self.home_for[readme]

    # -- the languages ----------------------------------------------------

    def rust(self, b: Block, n: int) -> tuple[bool, str]:
        crate = self.work / "rust"
        (crate / "examples").mkdir(parents=True, exist_ok=True)
        manifest = crate / "Cargo.toml"
        if not manifest.exists():
            manifest.write_text(
                '[package]\nname = "readme-snippets"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n'
                f'[dependencies]\nraftlet = {{ path = "{ROOT / "raft-core"}" }}\n\n'
                "# Not a member of raftlet's workspace.\n[workspace]\n"
            )
            (crate / "src").mkdir(exist_ok=True)
            (crate / "src" / "lib.rs").write_text("//! README snippets run as examples.\n")
            shutil.copy(ROOT / "Cargo.lock", crate / "Cargo.lock")
        name = f"block{n}"
        (crate / "examples" / f"{name}.rs").write_text(b.code)
        env = dict(os.environ)
        target = Path(env.setdefault("CARGO_TARGET_DIR", str(ROOT / "target")))
        # `cargo rustc` denies warnings in the snippet only: the flags of
        # raftlet itself, and so its cached build, stay as they are.
        ok, out = run([self.cargo, "rustc", "-q", "--manifest-path", str(manifest), "--example", name,
                       "--", "-D", "warnings"], cwd=crate, env=env)
        if not ok:
            return ok, out
        return run([str(target / "debug" / "examples" / name)], cwd=crate, env=env)

    def c(self, b: Block, n: int) -> tuple[bool, str]:
        src = self.work / f"block{n}.c"
        exe = self.work / f"block{n}"
        src.write_text(b.code)
        cc = os.environ.get("CC", "cc")
        strict = os.environ.get("CFLAGS_STRICT", "-std=c11 -Wall -Wextra -Wpedantic -Werror -Iinclude")
        sanitize = os.environ.get(
            "SANITIZE", "-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all")
        libs = os.environ.get("CLIBS", "-lpthread -ldl -lm")
        lib = ROOT / "target" / "release" / "libraftlet.a"
        if not lib.exists():
            return False, f"{lib} is missing: run `make lib` first"
        cmd = [cc, *shlex.split(strict), *shlex.split(sanitize), "-g", str(src), str(lib),
               *shlex.split(libs), "-o", str(exe)]
        ok, out = run(cmd, cwd=ROOT)
        if not ok:
            return ok, out
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1")
        return run([str(exe)], cwd=self.work, env=env)

    def python_(self, b: Block, n: int) -> tuple[bool, str]:
        if not self.python or not Path(self.python).exists():
            return False, ("no interpreter for Python blocks (the fresh venv of scripts/python-test.sh, "
                           f"{self.python}): run make test-python first, or pass --python")
        src = self.work / f"block{n}.py"
        src.write_text(b.code)
        return run([self.python, "-W", "error", str(src)], cwd=self.work)

    def go(self, b: Block, n: int) -> tuple[bool, str]:
        mod = self.work / f"go{n}"
        mod.mkdir()
        (mod / "main.go").write_text(b.code)
        shutil.copy(ROOT / "bindings" / "go" / "go.sum", mod / "go.sum")
        env = dict(os.environ)
        user_flags = subprocess.run(["go", "env", "GOFLAGS"], capture_output=True, text=True).stdout.strip()
        env["GOFLAGS"] = (user_flags + " " if user_flags else "") + "-tags=raftlet_intree"
        env["CGO_ENABLED"] = "1"
        for cmd in (
            ["go", "mod", "init", "example.com/readme"],
            ["go", "mod", "edit", f"-replace=github.com/raftlet/raftlet/bindings/go={ROOT / 'bindings' / 'go'}"],
            ["go", "mod", "edit", "-require=github.com/raftlet/raftlet/bindings/go@v0.0.0",
             "-require=go.etcd.io/raft/v3@v3.6.0"],
            ["go", "mod", "tidy"],
            ["go", "vet", "."],
            ["go", "run", "."],
        ):
            ok, out = run(cmd, cwd=mod, env=env)
            if not ok:
                return ok, out
        return True, out

    def sh(self, b: Block, n: int) -> tuple[bool, str]:
        home = self.home(b.readme)
        script = self.work / f"block{n}.sh"
        script.write_text(b.code)
        return run(["bash", "-euo", "pipefail", str(script)], cwd=ROOT, env=tool_env(home))

    # -- one README ---------------------------------------------------------

    def readme(self, blocks: list[Block], only: set[str], res: Result, counter: list[int]) -> None:
        # The files the README asks the reader to save, before anything runs.
        for b in blocks:
            if "file" in b.attrs:
                path = b.attrs["file"]
                if not path.startswith("~/"):
                    res.failures.append(f"{b.where}: file={path}: give a path under ~/ (outside the checkout)")
                    continue
                dest = self.home(b.readme) / path[2:]
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text(b.code)
        for b in blocks:
            if b.lang not in only or "no-run" in b.attrs:
                continue
            if b.lang == "text":
                res.shown += 1
                continue
            counter[0] += 1
            run_block = {"rust": self.rust, "c": self.c, "python": self.python_, "go": self.go, "sh": self.sh}
            t0 = time.monotonic()
            ok, out = run_block[b.lang](b, counter[0])
            took = time.monotonic() - t0
            res.ran += 1
            print(f"check-readme: {'ok  ' if ok else 'FAIL'} {b.where} {b.lang} ({took:.1f}s)", flush=True)
            if not ok:
                tail = "\n".join(out.splitlines()[-40:])
                res.failures.append(f"{b.where} ({b.lang}) failed:\n{tail}")


def validate(all_blocks: list[Block]) -> list[str]:
    """Blocks without a known language, and no-run blocks not justified."""
    errors = []
    used = set()
    for b in all_blocks:
        if b.lang not in LANGS:
            errors.append(f"{b.where}: a code block must name its language ({', '.join(LANGS)}); "
                          f"got {b.lang or 'none'!r}")
        unknown = set(b.attrs) - {"file", "no-run"}
        if unknown:
            errors.append(f"{b.where}: unknown attributes {sorted(unknown)}")
        if "no-run" in b.attrs:
            key = (b.readme, b.first_line)
            if key not in NO_RUN:
                errors.append(f"{b.where}: a no-run block must be justified in NO_RUN of "
                              f"scripts/check-readme.py (first line {b.first_line!r})")
            used.add(key)
    for key in NO_RUN.keys() - used:
        errors.append(f"NO_RUN in scripts/check-readme.py lists a block that no README has: {key}")
    return errors


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(LANGS), help="languages to run (default: all)")
    ap.add_argument("--python", default=os.environ.get("README_PYTHON", str(ROOT / "build/venv-fresh/bin/python")))
    ap.add_argument("readme", nargs="*", help="READMEs relative to the repository root (default: all)")
    args = ap.parse_args()
    only = {ALIASES.get(x, x) for x in args.only.split(",") if x}
    names = args.readme or readmes()
    parsed = {r: parse(r) for r in names}
    all_blocks = [b for bs in parsed.values() for b in bs]
    errors = validate(all_blocks) if not args.readme else [e for e in validate(all_blocks) if "NO_RUN in" not in e]
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    res = Result()
    (ROOT / "build").mkdir(exist_ok=True)
    # Outside the checkout, so that Go modules and sh homes are not inside it.
    work = Path(tempfile.mkdtemp(prefix="raftlet-readme-"))
    try:
        runner = Runner(work, args.python)
        counter = [0]
        for r in names:
            runner.readme(parsed[r], only, res, counter)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    skipped = sum(1 for b in all_blocks if "no-run" in b.attrs)
    print(f"check-readme: {len(names)} READMEs, {len(all_blocks)} code blocks: {res.ran} ran, "
          f"{res.shown} shown output, {skipped} no-run (justified), {len(res.failures)} failed")
    for f in res.failures:
        print(f"\n{f}", file=sys.stderr)
    return 1 if res.failures else 0


if __name__ == "__main__":
    sys.exit(main())
