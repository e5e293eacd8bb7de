import CSystemd
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A connection to a D-Bus bus through sd-bus (libsystemd), with async entry points.
///
/// sd-bus is not thread-safe, so the connection owns a thread of its own that alone touches it: it runs sd-bus's
/// event loop (`sd_bus_process`, then `poll` on the bus's descriptor and a wake-up pipe) and the jobs the async
/// methods hand it. Nothing blocks Swift's cooperative pool. Replies and signals are copied out of sd-bus whole
/// (`DBusMessage`) before they leave the thread.
///
/// Registrations that outlive one call (a pending call, a signal subscription) are kept by the bus thread with their
/// sd-bus slot and ended by cancellation: a cancelled `call` drops its slot (sd-bus forgets the reply), and a signal
/// stream whose consumer stops removes its match rule. Exporting an object (a BlueZ `LEAdvertisement1`) fits the
/// same shape: a registration whose slot comes from `sd_bus_add_object` and whose handler reads each method call
/// with `SDBusMessages.read` and answers with a reply built by `SDBusMessages.append`, sent with `sd_bus_send`.
public final class DBusConnection: Sendable {
    let loop: BusLoop
    /// The unique name the bus gave this connection (`:1.42`).
    public let uniqueName: String

    private init(loop: BusLoop, uniqueName: String) {
        self.loop = loop
        self.uniqueName = uniqueName
    }

    /// Connects to `bus` (the session bus's address read from `environment`) and waits for the bus to greet it.
    public static func open(
        _ bus: DBusBus, environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws(DBusError) -> DBusConnection {
        let address: String?
        switch bus {
        case .session:
            guard
                let session = DBusBus.sessionAddress(
                    environment: environment, socketExists: { access($0, F_OK) == 0 })
            else {
                throw .noBus("DBUS_SESSION_BUS_ADDRESS is not set and there is no bus socket in $XDG_RUNTIME_DIR")
            }
            address = session
        case .system: address = nil
        case .address(let text): address = text
        }
        let loop = try BusLoop()
        let result: Result<String, DBusError> = await withCheckedContinuation { continuation in
            loop.start(address: address) { continuation.resume(returning: $0) }
        }
        return DBusConnection(loop: loop, uniqueName: try result.get())
    }

    /// Ends the connection when the last reference goes (without waiting for the thread).
    deinit { loop.stop() }

    /// Calls `method` with `arguments` and returns its reply; an error reply is thrown as `DBusError.remote`, no
    /// reply within `timeout` (sd-bus's 25 s when nil) as `DBusError.timedOut`. Cancelling the task forgets the
    /// call and throws `CancellationError`.
    public func call(
        _ method: DBusMethod, _ arguments: [DBusValue] = [], timeout: Duration? = nil
    ) async throws -> DBusMessage {
        let ticket = CallTicket()
        let loop = loop
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<DBusMessage, any Error>) in
                loop.submit { state in
                    guard let state else { return continuation.resume(throwing: DBusError.connection("it is closed")) }
                    guard !ticket.isCancelled else { return continuation.resume(throwing: CancellationError()) }
                    state.startCall(method, arguments, timeout: timeout, ticket: ticket, continuation: continuation)
                }
            }
        } onCancel: {
            ticket.cancel()
            loop.submit { state in state?.cancelCall(ticket) }
        }
    }

    /// Calls a method that answers with nothing useful; throws as `call` does.
    public func callIgnoringReply(
        _ method: DBusMethod, _ arguments: [DBusValue] = [], timeout: Duration? = nil
    ) async throws {
        _ = try await call(method, arguments, timeout: timeout)
    }

    /// Subscribes to the signals `rule` lets through; returns once the bus has the rule, so that no signal sent
    /// after this returns is missed. The subscription ends when the stream's consumer stops (or is cancelled) and
    /// when the connection ends (the stream then finishes).
    public func signals(matching rule: DBusMatchRule) async throws(DBusError) -> AsyncStream<DBusMessage> {
        let (stream, continuation) = AsyncStream<DBusMessage>.makeStream()
        let loop = loop
        let installed: Result<UInt64, DBusError> = await withCheckedContinuation { installed in
            loop.submit { state in
                guard let state else { return installed.resume(returning: .failure(.connection("it is closed"))) }
                state.addMatch(rule, stream: continuation, installed: installed)
            }
        }
        let identifier = try installed.get()
        continuation.onTermination = { _ in loop.submit { state in state?.removeMatch(identifier) } }
        return stream
    }

    /// Sends a signal from `path` (for an exported object's `PropertiesChanged`, and tests).
    public func emitSignal(
        path: String, interface: String, member: String, _ arguments: [DBusValue] = []
    ) async throws(DBusError) {
        let loop = loop
        let result: Result<Void, DBusError> = await withCheckedContinuation { continuation in
            loop.submit { state in
                guard let state else { return continuation.resume(returning: .failure(.connection("it is closed"))) }
                continuation.resume(
                    returning: state.emitSignal(path: path, interface: interface, member: member, arguments))
            }
        }
        try result.get()
    }

    /// Ends the connection: pending calls fail, signal streams finish, queued messages are flushed.
    public func close() async {
        let loop = loop
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.submit { state in
                state?.shutdown(reason: "it is closed")
                continuation.resume()
            }
        }
    }
}

/// One `call`'s cancellation state, shared by the caller and the bus thread.
final class CallTicket: Sendable {
    private let state = Mutex<(cancelled: Bool, identifier: UInt64?)>((false, nil))

    var isCancelled: Bool { state.withLock { $0.cancelled } }
    func cancel() { state.withLock { $0.cancelled = true } }
    var identifier: UInt64? {
        get { state.withLock { $0.identifier } }
        set { state.withLock { $0.identifier = newValue } }
    }
}

/// The bus thread and its job queue. `submit` may be called from any thread; the jobs run on the bus thread, in
/// order, with the thread's `BusState`, or with nil once the connection has ended.
final class BusLoop: Sendable {
    typealias Job = @Sendable (BusState?) -> Void

    private let queue = Mutex<(jobs: [Job], ended: Bool)>(([], false))
    private let wakeRead: Int32
    private let wakeWrite: Int32

    init() throws(DBusError) {
        var descriptors: [Int32] = [0, 0]
        guard pipe(&descriptors) == 0 else { throw .connection("no pipe: \(SDBusMessages.errorText(-errno))") }
        for descriptor in descriptors {
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        }
        wakeRead = descriptors[0]
        wakeWrite = descriptors[1]
    }

    /// Starts the thread: it connects to `address` (the system bus when nil) and reports the unique name or why not.
    func start(address: String?, opened: @escaping @Sendable (Result<String, DBusError>) -> Void) {
        let thread = Thread { [self] in run(address: address, opened: opened) }
        thread.name = "D-Bus"
        thread.start()
    }

    /// Runs `job` on the bus thread, or at once with nil when the connection has ended.
    func submit(_ job: @escaping Job) {
        let queued = queue.withLock { queue -> Bool in
            guard !queue.ended else { return false }
            queue.jobs.append(job)
            return true
        }
        guard queued else { return job(nil) }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    /// Ends the connection without waiting.
    func stop() { submit { state in state?.shutdown(reason: "it is closed") } }

    private func run(address: String?, opened: @Sendable (Result<String, DBusError>) -> Void) {
        defer {
            let remaining = queue.withLock { queue in
                queue.ended = true
                defer { queue.jobs = [] }
                return queue.jobs
            }
            remaining.forEach { $0(nil) }
            close(wakeRead)
            close(wakeWrite)
        }
        let state: BusState
        switch BusState.connect(address: address) {
        case .success(let connected): state = connected
        case .failure(let error): return opened(.failure(error))
        }
        opened(.success(state.uniqueName))
        while true {
            let jobs = queue.withLock { queue in
                defer { queue.jobs = [] }
                return queue.jobs
            }
            for job in jobs { job(state) }
            guard state.isOpen else { return }
            if let failure = state.process() {
                state.shutdown(reason: failure)
                return
            }
            state.wait(wakeDescriptor: wakeRead)
        }
    }
}

/// What the bus thread owns: the sd-bus connection and every registration on it. Only the bus thread touches it.
final class BusState {
    private(set) var bus: OpaquePointer?
    let uniqueName: String
    private var nextIdentifier: UInt64 = 0
    private var calls: [UInt64: (slot: OpaquePointer?, box: CallBox)] = [:]
    private var matches: [UInt64: (slot: OpaquePointer?, box: MatchBox)] = [:]
    /// Slots to drop once sd-bus has returned from the callback that ended them.
    private var finishedSlots: [OpaquePointer] = []

    private init(bus: OpaquePointer, uniqueName: String) {
        self.bus = bus
        self.uniqueName = uniqueName
    }

    var isOpen: Bool { bus != nil }

    /// Connects and waits (on the bus thread) for the bus's greeting.
    static func connect(address: String?) -> Result<BusState, DBusError> {
        var bus: OpaquePointer? = nil
        var result: Int32
        if let address {
            result = sd_bus_new(&bus)
            if result >= 0 { result = sd_bus_set_address(bus, address) }
            if result >= 0 { result = sd_bus_set_bus_client(bus, 1) }
            if result >= 0 { result = sd_bus_start(bus) }
        } else {
            result = sd_bus_open_system(&bus)
        }
        var name: UnsafePointer<CChar>? = nil
        if result >= 0 { result = sd_bus_get_unique_name(bus, &name) }
        guard result >= 0, let bus, let name else {
            if let bus { sd_bus_flush_close_unref(bus) }
            let why = SDBusMessages.errorText(result)
            return .failure(.connection(address.map { "\($0): \(why)" } ?? "the system bus: \(why)"))
        }
        return .success(BusState(bus: bus, uniqueName: String(cString: name)))
    }

    /// Dispatches everything sd-bus has ready; nil, or why the connection has ended.
    func process() -> String? {
        guard let bus else { return "it is closed" }
        defer { dropFinishedSlots() }
        while true {
            let result = sd_bus_process(bus, nil)
            if result < 0 { return "the bus ended it (\(SDBusMessages.errorText(result)))" }
            if result == 0 { return nil }
        }
    }

    /// Sleeps until the bus's descriptor is ready, its timeout comes, or a job is submitted.
    func wait(wakeDescriptor: Int32) {
        guard let bus else { return }
        var deadline: UInt64 = 0
        var milliseconds: Int32 = -1
        if sd_bus_get_timeout(bus, &deadline) > 0, deadline != UInt64.max {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let nowMicroseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
            milliseconds =
                deadline <= nowMicroseconds ? 0 : Int32(clamping: (deadline - nowMicroseconds + 999) / 1000)
        }
        var descriptors = [
            pollfd(fd: sd_bus_get_fd(bus), events: Int16(truncatingIfNeeded: sd_bus_get_events(bus)), revents: 0),
            pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        _ = poll(&descriptors, 2, milliseconds)
        if descriptors[1].revents != 0 {
            var buffer = [UInt8](repeating: 0, count: 64)
            while read(wakeDescriptor, &buffer, buffer.count) > 0 {}
        }
    }

    static func microseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        return UInt64(clamping: seconds).multipliedReportingOverflow(by: 1_000_000).partialValue
            + UInt64(max(attoseconds, 0) / 1_000_000_000_000)
    }

    private func identifier() -> UInt64 {
        nextIdentifier += 1
        return nextIdentifier
    }

    private func dropFinishedSlots() {
        for slot in finishedSlots { sd_bus_slot_unref(slot) }
        finishedSlots = []
    }

    // MARK: Calls

    func startCall(
        _ method: DBusMethod, _ arguments: [DBusValue], timeout: Duration?, ticket: CallTicket,
        continuation: CheckedContinuation<DBusMessage, any Error>
    ) {
        guard let bus else { return continuation.resume(throwing: DBusError.connection("it is closed")) }
        var message: OpaquePointer? = nil
        var result = sd_bus_message_new_method_call(
            bus, &message, method.destination, method.path, method.interface, method.member)
        defer { sd_bus_message_unref(message) }
        if result >= 0, let message { result = SDBusMessages.append(arguments, to: message) }
        guard result >= 0, let message else {
            return continuation.resume(
                throwing: DBusError.invalidMessage(
                    "\(method.interface).\(method.member): \(SDBusMessages.errorText(result))"))
        }
        let identifier = identifier()
        let box = CallBox(identifier: identifier, state: self, continuation: continuation)
        var slot: OpaquePointer? = nil
        // 0 asks for sd-bus's default; a given timeout is at least one microsecond.
        let microseconds = timeout.map { max(Self.microseconds($0), 1) } ?? 0
        result = sd_bus_call_async(
            bus, &slot, message, sdCallReplied, Unmanaged.passUnretained(box).toOpaque(), microseconds)
        guard result >= 0 else {
            return continuation.resume(
                throwing: DBusError.connection("the call was not sent (\(SDBusMessages.errorText(result)))"))
        }
        calls[identifier] = (slot, box)
        ticket.identifier = identifier
    }

    /// A reply (or sd-bus's own error for a timeout or a closed connection) to call `identifier`.
    fileprivate func callReplied(_ identifier: UInt64, message: OpaquePointer?) {
        guard let (slot, box) = calls.removeValue(forKey: identifier) else { return }
        if let slot { finishedSlots.append(slot) }
        guard let message else { return box.continuation.resume(throwing: DBusError.unexpectedReply("no message")) }
        do {
            let reply = try SDBusMessages.read(message)
            guard reply.kind == .error else { return box.continuation.resume(returning: reply) }
            let name = reply.errorName ?? "org.freedesktop.DBus.Error.Failed"
            if name == "org.freedesktop.DBus.Error.NoReply" || name == "org.freedesktop.DBus.Error.Timeout" {
                let open = bus.map { sd_bus_is_open($0) > 0 } ?? false
                return box.continuation.resume(
                    throwing: open ? DBusError.timedOut : DBusError.connection("the bus ended it"))
            }
            box.continuation.resume(
                throwing: DBusError.remote(name: name, message: reply.body.first?.stringValue ?? ""))
        } catch {
            box.continuation.resume(throwing: error)
        }
    }

    func cancelCall(_ ticket: CallTicket) {
        guard let identifier = ticket.identifier, let (slot, box) = calls.removeValue(forKey: identifier) else {
            return
        }
        sd_bus_slot_unref(slot)
        box.continuation.resume(throwing: CancellationError())
    }

    // MARK: Signals

    func addMatch(
        _ rule: DBusMatchRule, stream: AsyncStream<DBusMessage>.Continuation,
        installed: CheckedContinuation<Result<UInt64, DBusError>, Never>
    ) {
        guard let bus else { return installed.resume(returning: .failure(.connection("it is closed"))) }
        let identifier = identifier()
        let box = MatchBox(identifier: identifier, state: self, stream: stream, installed: installed)
        var slot: OpaquePointer? = nil
        let result = sd_bus_add_match_async(
            bus, &slot, rule.description, sdSignalArrived, sdMatchInstalled, Unmanaged.passUnretained(box).toOpaque())
        guard result >= 0 else {
            stream.finish()
            return installed.resume(
                returning: .failure(.invalidMessage("match rule \(rule): \(SDBusMessages.errorText(result))")))
        }
        matches[identifier] = (slot, box)
    }

    fileprivate func signalArrived(_ identifier: UInt64, message: OpaquePointer?) {
        guard let message, let box = matches[identifier]?.box, let signal = try? SDBusMessages.read(message) else {
            return
        }
        box.stream.yield(signal)
    }

    fileprivate func matchInstalled(_ identifier: UInt64, reply: OpaquePointer?) {
        guard let box = matches[identifier]?.box, let installed = box.takeInstalled() else { return }
        if let reply, sd_bus_message_is_method_error(reply, nil) > 0 {
            let error = (try? SDBusMessages.read(reply)).map {
                DBusError.remote(
                    name: $0.errorName ?? "org.freedesktop.DBus.Error.Failed", message: $0.body.first?.stringValue ?? ""
                )
            }
            if let (slot, _) = matches.removeValue(forKey: identifier), let slot { finishedSlots.append(slot) }
            box.stream.finish()
            return installed.resume(returning: .failure(error ?? .connection("the match rule was refused")))
        }
        installed.resume(returning: .success(identifier))
    }

    func removeMatch(_ identifier: UInt64) {
        guard let (slot, box) = matches.removeValue(forKey: identifier) else { return }
        sd_bus_slot_unref(slot)
        box.stream.finish()
        box.takeInstalled()?.resume(returning: .failure(.connection("the subscription ended")))
    }

    // MARK: Sending

    func emitSignal(path: String, interface: String, member: String, _ arguments: [DBusValue]) -> Result<
        Void, DBusError
    > {
        guard let bus else { return .failure(.connection("it is closed")) }
        var message: OpaquePointer? = nil
        var result = sd_bus_message_new_signal(bus, &message, path, interface, member)
        defer { sd_bus_message_unref(message) }
        if result >= 0, let message { result = SDBusMessages.append(arguments, to: message) }
        if result >= 0 { result = sd_bus_send(bus, message, nil) }
        guard result >= 0 else {
            return .failure(.invalidMessage("\(interface).\(member): \(SDBusMessages.errorText(result))"))
        }
        return .success(())
    }

    // MARK: Ending

    /// Fails every pending call, finishes every stream and closes the connection (flushing what is queued).
    func shutdown(reason: String) {
        guard let bus else { return }
        let pending = calls
        calls = [:]
        for (_, (slot, box)) in pending {
            sd_bus_slot_unref(slot)
            box.continuation.resume(throwing: DBusError.connection(reason))
        }
        let subscriptions = matches
        matches = [:]
        for (_, (slot, box)) in subscriptions {
            sd_bus_slot_unref(slot)
            box.stream.finish()
            box.takeInstalled()?.resume(returning: .failure(.connection(reason)))
        }
        dropFinishedSlots()
        sd_bus_flush_close_unref(bus)
        self.bus = nil
    }
}

/// What a pending call's sd-bus callback gets as its user data (kept alive by `BusState.calls`).
final class CallBox {
    let identifier: UInt64
    unowned let state: BusState
    let continuation: CheckedContinuation<DBusMessage, any Error>

    init(identifier: UInt64, state: BusState, continuation: CheckedContinuation<DBusMessage, any Error>) {
        self.identifier = identifier
        self.state = state
        self.continuation = continuation
    }
}

/// What a match's sd-bus callbacks get as their user data (kept alive by `BusState.matches`).
final class MatchBox {
    let identifier: UInt64
    unowned let state: BusState
    let stream: AsyncStream<DBusMessage>.Continuation
    private var installed: CheckedContinuation<Result<UInt64, DBusError>, Never>?

    init(
        identifier: UInt64, state: BusState, stream: AsyncStream<DBusMessage>.Continuation,
        installed: CheckedContinuation<Result<UInt64, DBusError>, Never>
    ) {
        self.identifier = identifier
        self.state = state
        self.stream = stream
        self.installed = installed
    }

    /// The waiting `signals(matching:)`, once.
    func takeInstalled() -> CheckedContinuation<Result<UInt64, DBusError>, Never>? {
        defer { installed = nil }
        return installed
    }
}

private func sdCallReplied(
    _ message: OpaquePointer?, _ userData: UnsafeMutableRawPointer?, _ error: UnsafeMutablePointer<sd_bus_error>?
) -> Int32 {
    guard let userData else { return 0 }
    let box = Unmanaged<CallBox>.fromOpaque(userData).takeUnretainedValue()
    box.state.callReplied(box.identifier, message: message)
    return 1
}

private func sdSignalArrived(
    _ message: OpaquePointer?, _ userData: UnsafeMutableRawPointer?, _ error: UnsafeMutablePointer<sd_bus_error>?
) -> Int32 {
    guard let userData else { return 0 }
    let box = Unmanaged<MatchBox>.fromOpaque(userData).takeUnretainedValue()
    box.state.signalArrived(box.identifier, message: message)
    return 0
}

private func sdMatchInstalled(
    _ message: OpaquePointer?, _ userData: UnsafeMutableRawPointer?, _ error: UnsafeMutablePointer<sd_bus_error>?
) -> Int32 {
    guard let userData else { return 0 }
    let box = Unmanaged<MatchBox>.fromOpaque(userData).takeUnretainedValue()
    box.state.matchInstalled(box.identifier, reply: message)
    return 0
}
