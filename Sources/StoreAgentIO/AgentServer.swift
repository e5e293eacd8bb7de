import CAgentSupport
import CTAP2
import Foundation
import PasskeyStoreIO
import StoreAgent
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The store agent (`passkey agent`): holds store keys in locked memory and answers ``AgentRequest``s on a Unix
/// socket from processes of the same user, by the rule of ``HeldKeys``. It never sends a key: it unseals, seals and
/// authenticates for its clients.
public final class AgentServer: Sendable {
    public struct Options: Sendable {
        public var socketPath: String
        /// The only user whose connections are served: this process's own (`getuid()`); another for tests.
        public var allowedUser: uid_t
        /// Exit once no key is held any more (after one was): the agent `passkey unlock` starts does.
        public var exitsWhenEmpty: Bool
        /// How long a client may take to send a message.
        public var readTimeout: Duration
        /// A monotonic clock's reading, for ``HeldKeys``: the time since the agent started unless tests pass theirs.
        public var clock: (@Sendable () -> Duration)?

        public init(
            socketPath: String, allowedUser: uid_t = getuid(), exitsWhenEmpty: Bool = false,
            readTimeout: Duration = .seconds(5), clock: (@Sendable () -> Duration)? = nil
        ) {
            self.clock = clock
            self.socketPath = socketPath
            self.allowedUser = allowedUser
            self.exitsWhenEmpty = exitsWhenEmpty
            self.readTimeout = readTimeout
        }
    }

    public let options: Options
    private let listener: Int32
    private let started = ContinuousClock.now
    private let held = Mutex(HeldKeys<LockedKeyBuffer>())
    private let state = Mutex<(stopped: Bool, everHeld: Bool)>((false, false))

    /// Makes this process undumpable, then listens on `options.socketPath` (its directory made private, the socket
    /// mode 0600). Fails when another agent answers there; a socket file nobody answers on is replaced.
    public init(options: Options) throws(AgentError) {
        guard cagent_set_not_dumpable() == 0 else {
            throw AgentError(
                "cannot keep other processes from reading the agent's memory: \(AgentSocket.reason(errno))")
        }
        self.options = options
        let path = options.socketPath
        try AgentSocket.preparePrivateDirectory(for: path)
        if AgentClient(socketPath: path).isAnswering {
            throw AgentError("an agent is already running at \(path)")
        }
        unlink(path)
        guard var address = AgentSocket.address(path) else {
            throw AgentError("the agent's socket path \(path) is too long")
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw AgentError("cannot make the agent's socket: \(AgentSocket.reason(errno))") }
        let oldMask = umask(0o177)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        umask(oldMask)
        guard bound == 0, chmod(path, 0o600) == 0, listen(fd, 16) == 0 else {
            let code = errno
            close(fd)
            throw AgentError("cannot listen at \(path): \(AgentSocket.reason(code))")
        }
        listener = fd
    }

    /// Whether this process may be dumped or traced by others of its user (`PR_GET_DUMPABLE`): false once an agent
    /// started in it.
    public static var isDumpable: Bool { cagent_dumpable() != 0 }

    /// The monotonic time since the agent started: what ``HeldKeys`` is given.
    private var now: Duration { options.clock?() ?? (ContinuousClock.now - started) }

    /// Serves until ``stop()``, or, with `exitsWhenEmpty`, until no key is held any more; then removes the socket and
    /// forgets every key.
    public func run() {
        defer {
            close(listener)
            unlink(options.socketPath)
            _ = held.withLock { $0.forget(nil) }
        }
        while true {
            // Swept keys are wiped as their buffers go.
            _ = held.withLock { $0.sweep(now: now) }
            let empty = held.withLock { $0.isEmpty }
            let (stopped, everHeld) = state.withLock { ($0.stopped, $0.everHeld) }
            if stopped { return }
            // A started agent that was never fed within a minute has nothing to do either.
            if options.exitsWhenEmpty && empty && (everHeld || now > .seconds(60)) { return }
            var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 250) > 0 else { continue }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            Thread.detachNewThread { [self] in
                serve(client)
                close(client)
            }
        }
    }

    /// Makes ``run()`` return within a quarter of a second.
    public func stop() { state.withLock { $0.stopped = true } }

    /// Serves one connection: its peer must be the allowed user; then each message is answered in turn until the
    /// client closes. A message that does not parse is answered with a refusal and ends the connection.
    private func serve(_ client: Int32) {
        var peer: UInt32 = 0
        guard cagent_peer_uid(client, &peer) == 0, peer == options.allowedUser else {
            _ = AgentSocket.writeAll(
                client, AgentCodec.frame(AgentCodec.encode(.refused("the agent serves only its own user"))))
            return
        }
        while true {
            let request: AgentRequest
            do {
                guard let body = try AgentSocket.readFrame(client, timeout: options.readTimeout) else { return }
                request = try AgentCodec.decodeRequest(body)
            } catch let error as AgentError {
                _ = AgentSocket.writeAll(client, AgentCodec.frame(AgentCodec.encode(.refused(error.message))))
                return
            } catch {
                let reason = (error as? AgentCodecError)?.reason ?? "the message does not parse"
                _ = AgentSocket.writeAll(client, AgentCodec.frame(AgentCodec.encode(.refused(reason))))
                return
            }
            let reply = handle(request)
            guard AgentSocket.writeAll(client, AgentCodec.frame(AgentCodec.encode(reply))) else { return }
        }
    }

    /// The answer to `request` now.
    func handle(_ request: AgentRequest) -> AgentReply {
        switch request {
        case .unlock(let store, let passphrase, let idle):
            let key: StoreKey
            do {
                key = try SQLiteCredentialStore.storeKey(
                    at: URL(fileURLWithPath: store), passphrase: String(decoding: passphrase, as: UTF8.self))
            } catch {
                return error.code == .wrongPassphrase ? .wrongPassphrase : .refused(error.message)
            }
            let buffer: LockedKeyBuffer
            do {
                buffer = try key.withUnsafeBytes { bytes in try LockedKeyBuffer(copying: bytes) }
            } catch let error as AgentError {
                return .refused(error.message)
            } catch {
                return .refused("cannot keep the key")
            }
            _ = held.withLock { $0.hold(buffer, for: store, idle: idle, now: now) }
            state.withLock { $0.everHeld = true }
            return .done
        case .lock(let store):
            _ = held.withLock { $0.forget(store) }
            return .done
        case .status(let store):
            let (left, sinceUnlock) = held.withLock { ($0.remaining(store, now: now), $0.sinceUnlock(store, now: now)) }
            guard let left else { return .notHeld }
            return .held(idle: left, sinceUnlock: sinceUnlock ?? .zero)
        case .seal(let store, let use, let aad, let bytes):
            return withKey(store, use) { key, use throws(CredentialStoreError) in
                .bytes(try key.seal(bytes, aad: aad, use: use))
            }
        case .open(let store, let use, let aad, let bytes):
            return withKey(store, use) { key, use throws(CredentialStoreError) in
                try key.open(bytes, aad: aad, use: use).map(AgentReply.bytes) ?? .doesNotOpen
            }
        case .authenticate(let store, let use, let bytes):
            return withKey(store, use) { key, use throws(CredentialStoreError) in
                .bytes(try key.authenticationCode(bytes, use: use))
            }
        }
    }

    private func withKey(
        _ store: String, _ useByte: UInt8, _ body: (StoreKey, StoreKeyUse) throws(CredentialStoreError) -> AgentReply
    ) -> AgentReply {
        guard let use = StoreKeyUse(rawValue: useByte) else { return .refused("unknown key use \(useByte)") }
        guard let buffer = held.withLock({ $0.use(store, now: now) }) else { return .notHeld }
        let key = buffer.withBytes { StoreKey(bytes: $0) }
        do {
            return try body(key, use)
        } catch {
            return .refused(error.message)
        }
    }
}
