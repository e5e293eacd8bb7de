"""Linked phones through a cluster: `Tools/relay-cluster` with 3 instances behind HAProxy, and separately nginx
(the `cluster` fixture of test_relay_cluster.py), and the real `passkey scan --link`, `passkey listen` and
`passkey client get --phone`.

A phone registers its contact on `/cable/listen`, which the balancer sends to any instance; that instance issues
the contact ID under its own routing ID and keeps the contact in its own file. Every later listener connects to
`/cable/listen/{ROUTING_ID}` and every contact request to `/cable/contact/{CONTACT_ID}`, both routed to that
instance. So a linked sign-in works whichever instance the registration landed on, and still after a rolling
restart (SIGHUP: each instance drains, starts again and reads its contact file; the listeners reconnect).
"""

import os
import signal
import time

from conftest import stored_contacts
from test_linked import Listener, contact_ids, free_port, get_linked, link_by_qr
from test_relay_cluster import INSTANCES, cluster  # noqa: F401 - the fixture, parametrized by balancer
from test_webauthn_client import RelyingParty, new_store

# Phones linked at most, until every instance has issued a contact.
MAXIMUM_PHONES = 3 * INSTANCES


class Phone:
    """A phone linked to its own computer (directory), its relying party, and the instance keeping its contact."""

    def __init__(self, directory, cluster):
        self.directory = directory
        os.makedirs(directory)
        self.store = new_store(directory, "phone.sqlite")
        self.rp = RelyingParty()
        link_by_qr(directory, cluster, self.store, self.rp)
        [contact_id] = contact_ids(directory)
        self.instance = int.from_bytes(contact_id[:3], "big")
        self.radio = f"sim:127.0.0.1:{free_port()}"
        self.listener = None

    def listen(self, url):
        self.listener = Listener(self.store, url, self.radio)

    def sign_in(self, url):
        code, output, errors = get_linked(self.directory, url, self.radio, self.rp)
        assert code == 0, errors + "".join(self.listener.lines)
        assert "FIDO:/" not in errors
        assert self.rp.verify_authentication(output).user_verified


def instance_contacts(cluster, instance):
    return stored_contacts(os.path.join(cluster.directory, "cluster", f"contacts-{instance}.json"))


def test_a_linked_sign_in_works_whichever_instance_the_balancer_picks(cluster, tmp_path):
    phones = []
    while {phone.instance for phone in phones} != set(range(1, INSTANCES + 1)):
        assert len(phones) < MAXIMUM_PHONES, f"registrations landed on {[phone.instance for phone in phones]}"
        phones.append(Phone(str(tmp_path / f"phone-{len(phones)}"), cluster))
    print(f"{cluster.balancer}: {len(phones)} phones registered on instances {[p.instance for p in phones]}")
    # Each instance keeps exactly the contacts it issued, in its own file.
    for instance in range(1, INSTANCES + 1):
        assert len(instance_contacts(cluster, instance)) == sum(1 for p in phones if p.instance == instance)

    try:
        for phone in phones:
            phone.listen(cluster.url)
        for phone in phones:
            phone.sign_in(cluster.url)
            phone.listener.wait_for("listening again")

        # A rolling restart: every listener is cut off, backs off and reconnects to its instance, which read its
        # contacts back from its file.
        started = time.monotonic()
        cluster.process.send_signal(signal.SIGHUP)
        deadline = started + 90
        while "rolling restart done" not in cluster.said():
            assert time.monotonic() < deadline, cluster.said()
            time.sleep(0.2)
        for phone in phones:
            phone.listener.wait_for("disconnected from the relay")
            phone.listener.wait_for("listening:")
        print(f"{cluster.balancer}: restarted, all listeners back within {time.monotonic() - started:.1f} s")
        for phone in phones:
            phone.sign_in(cluster.url)
    finally:
        logs = [phone.listener.stop() for phone in phones if phone.listener]
    for log in logs:
        assert log.count("woken: a linked computer asks for this phone") == 2, log
