"""A desktop notification server for tests: `org.freedesktop.Notifications` on a session bus, written with dbus-next
(an independent D-Bus implementation), that answers every notification the way it is told.

    python notification_server.py ADDRESS ANSWER RECORD

ADDRESS is the bus (`unix:path=…`, as `dbus-daemon --print-address` gives it); ANSWER is the action key to invoke on
every notification (`allow`, `deny`, `account-1`…), `dismiss` (closed by the person without an action) or `silent`
(nothing: the notification expires or is closed by its sender). Each call is appended to RECORD as one JSON line
(`{"call": "Notify", …}`; bytes in a hint, such as an image's pixels, as `{"base64": …}`), and `ready` is printed
once the name is owned. Runs until killed.
"""

import asyncio
import base64
import json
import sys

from dbus_next.aio import MessageBus
from dbus_next.service import ServiceInterface, method, signal


def plain(value):
    """A hint's value as JSON can hold it: bytes (an image's pixels) as {"base64": …}, structures as lists."""
    if isinstance(value, (bytes, bytearray)):
        return {"base64": base64.b64encode(value).decode()}
    if isinstance(value, (list, tuple)):
        return [plain(entry) for entry in value]
    return value


class Notifications(ServiceInterface):
    def __init__(self, answer, record):
        super().__init__("org.freedesktop.Notifications")
        self.answer = answer
        self.record = record
        self.next_id = 1

    def write(self, entry):
        with open(self.record, "a") as file:
            file.write(json.dumps(entry) + "\n")

    @method()
    def Notify(self, app_name: "s", replaces_id: "u", app_icon: "s", summary: "s", body: "s", actions: "as",
               hints: "a{sv}", expire_timeout: "i") -> "u":
        notification = self.next_id
        self.next_id += 1
        self.write({
            "call": "Notify", "id": notification, "app_name": app_name, "replaces_id": replaces_id,
            "app_icon": app_icon, "summary": summary, "body": body, "actions": actions,
            "hints": {key: plain(value.value) for key, value in hints.items()}, "expire_timeout": expire_timeout,
        })
        loop = asyncio.get_running_loop()
        if self.answer == "dismiss":
            loop.call_later(0.2, self.NotificationClosed, notification, 2)
        elif self.answer != "silent":
            loop.call_later(0.2, self.invoke, notification, self.answer)
        return notification

    def invoke(self, notification, key):
        self.ActionInvoked(notification, key)
        self.NotificationClosed(notification, 2)

    @method()
    def CloseNotification(self, id: "u"):
        self.write({"call": "CloseNotification", "id": id})
        self.NotificationClosed(id, 3)

    @method()
    def GetCapabilities(self) -> "as":
        return ["actions", "body"]

    @method()
    def GetServerInformation(self) -> "ssss":
        return ["passkey-test-notifications", "passkey", "1", "1.2"]

    @signal()
    def ActionInvoked(self, id, key) -> "us":
        return [id, key]

    @signal()
    def NotificationClosed(self, id, reason) -> "uu":
        return [id, reason]


async def main(address, answer, record):
    bus = await MessageBus(bus_address=address).connect()
    bus.export("/org/freedesktop/Notifications", Notifications(answer, record))
    await bus.request_name("org.freedesktop.Notifications")
    print("ready", flush=True)
    await bus.wait_for_disconnect()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
