"""pty_run.py - runs a command with a pseudo-terminal as its standard input,
output and error, and writes everything it wrote there to standard output;
exits with the command's exit status. For the specs of what moonrover shows
only on a terminal.

Usage: pty_run.py PROGRAM [ARG...]"""
import os
import pty
import sys

pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
seen = b""
while True:
    try:
        data = os.read(fd, 65536)
    except OSError:
        break
    if not data:
        break
    seen += data
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(seen)
sys.exit(os.waitstatus_to_exitcode(status))
