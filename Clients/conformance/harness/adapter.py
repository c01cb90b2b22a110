"""An SDK's adapter process: JSON commands a line on its standard input, one JSON answer a line on its output."""

import json
import queue
import subprocess
import threading


class AdapterError(RuntimeError):
    pass


class Adapter:
    """Starts `command` and talks to it; lines of its output that are not JSON objects (stray logs) go to `log`."""

    def __init__(self, command, log_path, timeout=120):
        self.timeout = timeout
        self.log = open(log_path, "a")
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True, bufsize=1)
        self.answers = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            if line.startswith("{"):
                self.answers.put(json.loads(line))
            else:
                self.log.write(line)
        self.answers.put(None)

    def call(self, command):
        """Sends one command and waits for its answer (`{"ok": …}`); fails when the process dies or stays silent."""
        self.log.write("> " + json.dumps(command) + "\n")
        self.log.flush()
        try:
            self.process.stdin.write(json.dumps(command) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError as error:
            raise AdapterError(f"the adapter exited ({self.process.poll()})") from error
        try:
            answer = self.answers.get(timeout=self.timeout)
        except queue.Empty as error:
            raise AdapterError(f"no answer to {command.get('op')} within {self.timeout} s") from error
        if answer is None:
            raise AdapterError(f"the adapter exited ({self.process.wait()}) during {command.get('op')}")
        self.log.write("< " + json.dumps(answer) + "\n")
        return answer

    def close(self):
        try:
            self.process.stdin.close()
            self.process.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        self.log.close()
