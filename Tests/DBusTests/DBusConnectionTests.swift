import CSystemd
import DBus
import Foundation
import Testing
import TestSupport

/// A private session bus for one test: `dbus-daemon --session` started by the test, stopped at the end.
final class PrivateBus: Sendable {
    let daemon: ChildProcess
    let address: String

    init() async throws {
        daemon = try ChildProcess(
            "/usr/bin/dbus-daemon", ["--session", "--nofork", "--nopidfile", "--nosyslog", "--print-address=1"])
        let line = try #require(await daemon.stdoutLine(timeout: .seconds(20)), "dbus-daemon gave no address")
        address = line.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(address.hasPrefix("unix:"))
    }

    func connect() async throws -> DBusConnection { try await DBusConnection.open(.address(address)) }

    deinit { daemon.stop() }
}

let busDaemon = DBusMethod(
    destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
    member: "GetId")

extension DBusMethod {
    /// `org.freedesktop.DBus`'s own method `member`.
    static func daemon(_ member: String) -> DBusMethod {
        var method = busDaemon
        method.member = member
        return method
    }
}

@Suite("DBus connection (private dbus-daemon)")
struct DBusConnectionTests {
    @Test("calls with typed arguments and reads typed replies")
    func typedCalls() async throws {
        let bus = try await PrivateBus()
        let connection = try await bus.connect()
        #expect(connection.uniqueName.hasPrefix(":"))

        var id = try await connection.call(.daemon("GetId")).arguments
        let busID: String = try id.next()
        #expect(busID.count == 32 && busID.allSatisfy(\.isHexDigit))

        var requested = try await connection.call(
            .daemon("RequestName"), [.string("org.passkey.Test"), .uint32(4)]
        ).arguments
        #expect(try requested.next(UInt32.self) == 1)  // DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER

        var owned = try await connection.call(.daemon("NameHasOwner"), [.string("org.passkey.Test")]).arguments
        #expect(try owned.next(Bool.self))

        var user = try await connection.call(.daemon("GetConnectionUnixUser"), [.string(connection.uniqueName)])
            .arguments
        #expect(try user.next(UInt32.self) == getuid())

        var credentials = try await connection.call(
            .daemon("GetConnectionCredentials"), [.string(connection.uniqueName)]
        ).arguments
        let dictionary: [String: DBusValue] = try credentials.next()
        #expect(dictionary["UnixUserID"] == .uint32(getuid()))
        #expect(dictionary["ProcessID"] == .uint32(UInt32(getpid())))

        var names = try await connection.call(.daemon("ListNames")).arguments
        let listed: [String] = try names.next()
        #expect(listed.contains("org.passkey.Test") && listed.contains(connection.uniqueName))

        // A reply of another type than asked for is an error, not a value.
        var wrong = try await connection.call(.daemon("NameHasOwner"), [.string("org.passkey.Test")]).arguments
        #expect(throws: DBusError.self) { _ = try wrong.next(String.self) }
        await connection.close()
    }

    @Test("an error reply is thrown with its name; a missing service is told apart")
    func errorReplies() async throws {
        let bus = try await PrivateBus()
        let connection = try await bus.connect()
        let missing = DBusMethod(
            destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
            interface: "org.freedesktop.Notifications", member: "GetServerInformation")
        let error = try await #require(throws: DBusError.self) { try await connection.call(missing) }
        #expect(error.isNoService)
        #expect(error.remoteName == "org.freedesktop.DBus.Error.ServiceUnknown")

        let unknown = try await #require(throws: DBusError.self) { try await connection.call(.daemon("NoSuchMethod")) }
        #expect(unknown.remoteName == "org.freedesktop.DBus.Error.UnknownMethod")
        #expect(!unknown.isNoService)

        // A wrong signature is the peer's error too, and the connection goes on.
        let badArguments = try await #require(throws: DBusError.self) {
            try await connection.call(.daemon("NameHasOwner"), [.uint32(1)])
        }
        #expect(badArguments.remoteName == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(try await connection.call(.daemon("GetId")).body.count == 1)
        await connection.close()
    }

    @Test("a message sd-bus refuses to build fails alone, and the connection goes on")
    func invalidMessages() async throws {
        let bus = try await PrivateBus()
        let connection = try await bus.connect()
        var method = DBusMethod.daemon("GetId")
        method.path = "not a path"
        await #expect(throws: DBusError.self) { try await connection.call(method) }
        await #expect(throws: DBusError.self) {
            try await connection.call(.daemon("NameHasOwner"), [.array(elementSignature: "s", [.uint32(1)])])
        }
        await #expect(throws: DBusError.self) {
            try await connection.emitSignal(
                path: "/x", interface: "org.passkey.Test", member: "S", [.string("a\u{0}b")])
        }
        #expect(try await connection.call(.daemon("GetId")).body.count == 1)
        await connection.close()
    }

    @Test("every supported type goes out in a signal and comes back the same")
    func signalRoundTrip() async throws {
        let bus = try await PrivateBus()
        let receiver = try await bus.connect()
        let sender = try await bus.connect()
        let values: [DBusValue] = [
            .string("passkey ✓ 'quoted'"), .uint32(4_000_000_000), .int32(-7), .bool(true), .bool(false),
            .byte(0xFF), .int16(-2), .uint16(65535), .int64(-1 << 40), .uint64(1 << 63), .double(0.25),
            .objectPath("/org/passkey/Test"), .signature("a{sv}"), .strings(["allow", "Allow", "deny", "Deny"]),
            .strings([]), .bytes([0, 1, 0xFE, 0xFF]), .bytes([]),
            .variantDictionary([
                "urgency": .byte(2), "x-passkey-id": .string("abc"), "list": .strings(["a"]),
                "nested": .variantDictionary(["n": .int32(1)]),
            ]),
            .stringDictionary(["a": "b"]), .structure([.string("s"), .uint32(1)]), .variant(.variant(.bool(true))),
        ]
        let signals = try await receiver.signals(
            matching: DBusMatchRule(path: "/org/passkey/Test", interface: "org.passkey.Test", member: "Values"))
        try await sender.emitSignal(path: "/org/passkey/Test", interface: "org.passkey.Test", member: "Other", [])
        try await sender.emitSignal(path: "/org/passkey/Test", interface: "org.passkey.Test", member: "Values", values)
        var iterator = signals.makeAsyncIterator()
        let signal = try #require(await iterator.next())
        #expect(signal.kind == .signal)
        #expect(signal.member == "Values")
        #expect(signal.sender == sender.uniqueName)
        #expect(signal.body == values)
        #expect(signal.signature == values.map(\.signature).joined())
        var arguments = signal.arguments
        #expect(try arguments.next(String.self) == "passkey ✓ 'quoted'")
        #expect(try arguments.next(UInt32.self) == 4_000_000_000)
        #expect(try arguments.next(Int32.self) == -7)
        await receiver.close()
        await sender.close()
    }

    @Test("a subscription gets the bus's signals and ends when its consumer stops")
    func busSignals() async throws {
        let bus = try await PrivateBus()
        let watcher = try await bus.connect()
        let other = try await bus.connect()
        let owners = try await watcher.signals(
            matching: DBusMatchRule(
                sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                argument0: "org.passkey.Watched"))
        let consumer = Task { () -> [String] in
            var seen: [String] = []
            for await signal in owners {
                var arguments = signal.arguments
                _ = try arguments.next(String.self)
                _ = try arguments.next(String.self)
                seen.append(try arguments.next(String.self))
                if seen.count == 1 { break }
            }
            return seen
        }
        _ = try await other.call(.daemon("RequestName"), [.string("org.passkey.Unwatched"), .uint32(4)])
        _ = try await other.call(.daemon("RequestName"), [.string("org.passkey.Watched"), .uint32(4)])
        #expect(try await consumer.value == [other.uniqueName])

        // A consumer that is cancelled while it waits ends its stream.
        let quiet = try await watcher.signals(matching: DBusMatchRule(interface: "org.passkey.Never"))
        let waiting = Task { () -> Int in
            var count = 0
            for await _ in quiet { count += 1 }
            return count
        }
        try await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        #expect(await waiting.value == 0)
        await watcher.close()
        await other.close()
    }

    @Test("a call nobody answers times out, and a cancelled one ends at once")
    func timeoutAndCancellation() async throws {
        let bus = try await PrivateBus()
        let connection = try await bus.connect()
        // A second connection that is never processed: calls to it are delivered and never answered.
        let silent = try SilentPeer(address: bus.address)
        defer { silent.close() }
        let ping = DBusMethod(
            destination: silent.uniqueName, path: "/", interface: "org.freedesktop.DBus.Peer", member: "Ping")

        let start = ContinuousClock.now
        let error = try await #require(throws: DBusError.self) {
            try await connection.call(ping, timeout: .milliseconds(300))
        }
        #expect(error == .timedOut)
        #expect(ContinuousClock.now - start < .seconds(5))

        let cancelled = Task { try await connection.call(ping, timeout: .seconds(60)) }
        try await Task.sleep(for: .milliseconds(100))
        let cancelledAt = ContinuousClock.now
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(ContinuousClock.now - cancelledAt < .seconds(5))

        // Already cancelled before the bus thread sees it.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await connection.call(ping, timeout: .seconds(60))
        }
        await #expect(throws: CancellationError.self) { try await early.value }
        #expect(try await connection.call(.daemon("GetId")).body.count == 1)
        await connection.close()
    }

    @Test("when the bus goes away, calls fail and streams finish; a closed connection refuses calls")
    func busEnds() async throws {
        let bus = try await PrivateBus()
        let connection = try await bus.connect()
        let stream = try await connection.signals(matching: DBusMatchRule(interface: "org.passkey.Never"))
        let waiting = Task { () -> Int in
            var count = 0
            for await _ in stream { count += 1 }
            return count
        }
        bus.daemon.signal(SIGKILL)
        _ = await bus.daemon.wait(timeout: .seconds(10))
        #expect(await waiting.value == 0)
        let error = try await #require(throws: DBusError.self) { try await connection.call(.daemon("GetId")) }
        guard case .connection = error else {
            Issue.record("expected a connection error, got \(error)")
            return
        }

        let other = try await PrivateBus()
        let closed = try await other.connect()
        await closed.close()
        await #expect(throws: DBusError.self) { try await closed.call(.daemon("GetId")) }
        await #expect(throws: DBusError.self) { try await closed.signals(matching: DBusMatchRule(member: "X")) }
    }

    @Test("opening fails with a reason for a missing bus")
    func openFailures() async throws {
        let directory = try TemporaryDirectory()
        let error = try await #require(throws: DBusError.self) {
            try await DBusConnection.open(.address("unix:path=\(directory.url.path)/none"))
        }
        #expect("\(error)".contains("No such file or directory"))
        #expect(!"\(error)".contains("errno"))
        await #expect(
            throws: DBusError.noBus(
                "DBUS_SESSION_BUS_ADDRESS is not set and there is no bus socket in $XDG_RUNTIME_DIR")
        ) {
            try await DBusConnection.open(.session, environment: ["XDG_RUNTIME_DIR": directory.url.path])
        }
    }
}

/// A raw sd-bus connection the test never processes: the bus delivers calls to it, and nothing answers them.
final class SilentPeer: @unchecked Sendable {
    private var bus: OpaquePointer?
    let uniqueName: String

    init(address: String) throws {
        var bus: OpaquePointer? = nil
        var result = sd_bus_new(&bus)
        if result >= 0 { result = sd_bus_set_address(bus, address) }
        if result >= 0 { result = sd_bus_set_bus_client(bus, 1) }
        if result >= 0 { result = sd_bus_start(bus) }
        var name: UnsafePointer<CChar>? = nil
        if result >= 0 { result = sd_bus_get_unique_name(bus, &name) }
        guard result >= 0, let name else { throw DBusError.connection("silent peer: \(result)") }
        self.bus = bus
        uniqueName = String(cString: name)
    }

    func close() {
        sd_bus_flush_close_unref(bus)
        bus = nil
    }
}
