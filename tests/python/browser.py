"""Headless Chromium driven over the DevTools protocol, for the page's tests (test_serve.py, test_charts.py).
Imported from the script's own directory. Every host name but 127.0.0.1 is unresolvable: the page must work offline.
"""
import fcntl
import json
import os
import select
import shutil
import subprocess
import time


def find_chromium():
    """Debian's chromium (or chromium-browser), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """Headless Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe: commands on its fd 3,
    answers and events on its fd 4, each a JSON message ended by a NUL byte), one page attached."""

    def __init__(self):
        commands, self.answers = os.pipe(), os.pipe()
        self.out, self.inp = commands[1], self.answers[0]
        ends = (commands[0], self.answers[1])

        def on_fds_3_and_4():  # the child's ends of the two pipes, where Chromium looks for them
            a, b = (fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in ends)  # so that placing one cannot close the other
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [find_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--remote-debugging-pipe", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
             "--window-size=1000,1400", "about:blank"],
            pass_fds=(3, 4), preexec_fn=on_fds_3_and_4, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for fd in ends:
            os.close(fd)
        self.ids, self.buffer, self.events, self.session = 0, b"", [], None
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Network.enable")
        self.call("Page.enable")

    def call(self, method, **params):
        self.ids += 1
        message = {"id": self.ids, "method": method, "params": params}
        if self.session:
            message["sessionId"] = self.session
        os.write(self.out, json.dumps(message).encode() + b"\0")
        deadline = time.time() + 60
        while True:
            while b"\0" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\0", 1)
                answer = json.loads(raw)
                if answer.get("id") == self.ids:
                    if "error" in answer:
                        raise RuntimeError(f"{method}: {answer['error']}")
                    return answer["result"]
                if "method" in answer:
                    self.events.append(answer)
            if not select.select([self.inp], [], [], max(0.0, deadline - time.time()))[0]:
                raise TimeoutError(f"Chromium did not answer {method}")
            chunk = os.read(self.inp, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium went away")
            self.buffer += chunk

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:60]}...: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression, seconds=60):
        """Until expression is true (an error, such as a page still loading, is not yet)."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            try:
                if self.evaluate(expression):
                    return True
            except RuntimeError:
                pass
            time.sleep(0.1)
        return False

    def requested(self):
        return [e["params"]["request"]["url"] for e in self.events if e["method"] == "Network.requestWillBeSent"]

    def close(self):
        try:
            self.call("Browser.close")
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
