#!/usr/bin/env python3
"""Drive a shell on a real terminal (a pty) for run_signals.sh: ^C, ^Z and fg as a user types
them, against a command run natively or under thpemu run.

  run_signals_pty.py ctrl-c-job    THPEMU_RUN SIGCOUNT   interactive bash, the command a job
  run_signals_pty.py ctrl-c-script THPEMU_RUN            a script on the terminal, its program
                                                         killed by ^C: does the script end too?
  run_signals_pty.py ctrl-z-fg     THPEMU_RUN SIGCOUNT   interactive bash: ^Z, jobs, fg, input

THPEMU_RUN is the launcher prefix ("" for native, else "PATH/thpemu run --quiet --"). Prints
what it saw as KEY=VALUE lines; exits 1 (with the terminal's text) when something expected never
came.
"""
import os
import pty
import select
import signal
import sys
import time


class Term:
    def __init__(self, argv, env):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execvpe(argv[0], argv, env)
        self.out = b""

    def send(self, data):
        os.write(self.fd, data.encode())

    def expect(self, text, timeout=20.0):
        """Wait until text appears after what was matched last; the text before it."""
        end = time.monotonic() + timeout
        want = text.encode()
        while want not in self.out:
            left = end - time.monotonic()
            if left <= 0:
                fail(f"never saw {text!r}", self)
            r, _, _ = select.select([self.fd], [], [], left)
            if r:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:
                    chunk = b""
                if not chunk:
                    fail(f"the terminal closed before {text!r}", self)
                self.out += chunk
        before, _, self.out = self.out.partition(want)
        return before.decode(errors="replace")

    def drain(self, quiet=0.3):
        """Forget everything the terminal says until it has been quiet for a moment."""
        while select.select([self.fd], [], [], quiet)[0]:
            try:
                if not os.read(self.fd, 4096):
                    break
            except OSError:
                break
        self.out = b""

    def close(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)


def fail(why, term):
    sys.stderr.write(f"run_signals_pty: {why}; terminal said:\n{term.out.decode(errors='replace')}\n")
    term.close()
    sys.exit(1)


def shell(extra_env=None):
    env = dict(os.environ, PS1="PROMPT> ", TERM="dumb", HISTFILE="/dev/null")
    env.update(extra_env or {})
    t = Term(["bash", "--norc", "--noprofile", "-i"], env)
    t.send("stty -echo\n")
    t.expect("PROMPT> ")
    t.expect("PROMPT> ")
    return t


def ready_file():
    path = os.path.join(os.environ.get("T_TMP", "/tmp"), f"ready.{os.getpid()}")
    if os.path.exists(path):
        os.unlink(path)
    return path


def wait_file(path, term):
    end = time.monotonic() + 20
    while not os.path.exists(path):
        if time.monotonic() > end:
            fail(f"{path} never appeared", term)
        time.sleep(0.02)


def ctrl_c_job(run, sigcount):
    """^C to an interactive shell's foreground job: the program gets one SIGINT."""
    t = shell()
    ready = ready_file()
    t.send(f"{run} {sigcount} 300 {ready} INT; echo rc=$?\n")
    wait_file(ready, t)
    t.send("\x03")
    said = t.expect("rc=")
    rc = t.expect("\n").strip()
    count = [l.split()[1] for l in said.splitlines() if l.startswith("INT ")]
    print(f"count={count[0] if count else 'none'}")
    print(f"rc={rc}")
    t.close()


def ctrl_c_script(run):
    """^C while a script on the terminal runs a program that dies of SIGINT: natively the script
    (which got the SIGINT too) ends without running its next line."""
    t = shell()
    ready = ready_file()
    t.send(f"bash -c 'touch {ready}; {run} sleep 30; echo next-line'\n")
    wait_file(ready, t)
    time.sleep(0.5)  # the program started (sleep has no handler to say so)
    t.send("\x03")
    said = t.expect("PROMPT> ")
    t.send("echo rc=$?\n")  # a list after a command killed by ^C is not run
    t.expect("rc=")
    rc = t.expect("\n").strip()
    print(f"next_line={'ran' if 'next-line' in said else 'skipped'}")
    print(f"rc={rc}")
    t.close()


def ctrl_z_fg(run, sigcount):
    """^Z stops the job (the shell says so and prompts), fg continues it with the terminal: the
    program then reads what is typed."""
    t = shell()
    t.send(f"{run} {sigcount} read\n")
    t.expect("reading")
    time.sleep(0.3)
    t.send("\x1a")
    said = t.expect("PROMPT> ")
    print(f"stopped={'yes' if 'Stopped' in said else 'no'}")
    t.send("jobs\n")
    said = t.expect("PROMPT> ")
    print(f"jobs={'stopped' if 'Stopped' in said else 'other'}")
    t.send("fg\n")
    time.sleep(0.5)
    t.send("hello\n")
    said = t.expect("PROMPT> ")
    t.send("echo rc=$?\n")  # a list after a stopped job is not run
    t.expect("rc=")
    rc = t.expect("\n").strip()
    print(f"read={'yes' if 'read: hello' in said else 'no'}")
    print(f"rc={rc}")
    t.close()


def ctrl_z_script(run, sigcount):
    """^Z while a script on the terminal runs the program: the script's job stops, fg continues
    the script and the program, which reads the terminal, and the script goes on."""
    t = shell()
    t.send(f"bash -c '{run} {sigcount} read; echo script-went-on'\n")
    t.expect("reading")
    time.sleep(0.3)
    t.send("\x1a")
    said = t.expect("PROMPT> ")
    print(f"stopped={'yes' if 'Stopped' in said else 'no'}")
    t.send("fg\n")
    time.sleep(0.5)
    t.send("hello\n")
    said = t.expect("PROMPT> ")
    print(f"read={'yes' if 'read: hello' in said else 'no'}")
    print(f"went_on={'yes' if 'script-went-on' in said else 'no'}")
    t.close()


def background_read(run, sigcount):
    """A background job that reads the terminal stops (SIGTTIN); fg gives it the terminal."""
    t = shell()
    t.send(f"{run} {sigcount} read &\n")
    t.expect("reading")
    time.sleep(1)
    t.send("jobs\n")
    t.expect("Stopped")
    print("stopped=yes")
    t.drain()
    t.send("fg\n")
    time.sleep(0.5)
    t.send("hello\n")
    said = t.expect("PROMPT> ")
    print(f"read={'yes' if 'read: hello' in said else 'no'}")
    t.close()


def main():
    mode, run = sys.argv[1], sys.argv[2]
    if mode == "ctrl-c-job":
        ctrl_c_job(run, sys.argv[3])
    elif mode == "ctrl-c-script":
        ctrl_c_script(run)
    elif mode == "ctrl-z-script":
        ctrl_z_script(run, sys.argv[3])
    elif mode == "background-read":
        background_read(run, sys.argv[3])
    elif mode == "ctrl-z-fg":
        ctrl_z_fg(run, sys.argv[3])
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
