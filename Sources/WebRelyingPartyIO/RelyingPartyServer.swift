import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import WebRelyingParty

/// Settings of a ``RelyingPartyServer``.
public struct RelyingPartyServerConfiguration: Sendable {
    /// The address to listen on (default `127.0.0.1`).
    public var host = "127.0.0.1"
    /// The TCP port (default 8787); 0 lets the system choose one (see ``RelyingPartyServer/port``).
    public var port = 8787
    /// Connections open at once (default 64). At the limit a new connection takes the place of the one idle the
    /// longest (no request under way: a browser opens it again when it needs it); when every one is in a request,
    /// the new one is closed as soon as it is accepted.
    public var maximumConnections = 64
    /// A connection is closed when no request part arrives for this long (default 30 s); a request head must
    /// arrive whole within it.
    public var idleTimeout = Duration.seconds(30)
    /// A request must arrive whole, body included, within this long of its head (default 10 s), or it is answered
    /// 408 and the connection closes.
    public var requestTimeout = Duration.seconds(10)
    /// The largest request body (default 64 KiB): larger ones are answered 413.
    public var maximumBodyBytes = RelyingPartySite.maximumBodyBytes
    /// Request headers: at most this many fields (default 64) and this many bytes in all (default 16 KiB).
    public var maximumHeaderFields = 64
    public var maximumHeaderBytes = 16 * 1024

    /// The defaults: `127.0.0.1:8787`.
    public init() {}
}

/// Why a ``RelyingPartyServer`` could not start.
public enum RelyingPartyServerError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The listening socket could not be bound; the reason is the system's.
    case cannotListen(host: String, port: Int, reason: String)
    /// A setting is out of range, or the service could not be made for the bound port.
    case invalidConfiguration(String)

    public var description: String {
        switch self {
        case .cannotListen(let host, let port, let reason): "cannot listen on \(host):\(port): \(reason)"
        case .invalidConfiguration(let reason): reason
        }
    }
}

/// The web relying party over HTTP/1.1 on SwiftNIO: one event loop, a ``RelyingPartyHTTPHandler`` per
/// connection, every decision in ``RelyingPartySite``.
///
/// ```swift
/// var configuration = RelyingPartyServerConfiguration()
/// configuration.port = 0
/// let server = try await RelyingPartyServer.start(configuration) { port in
///     RelyingPartyService(site: …origins for `port`…, environment: .stateFile(RelyingPartyStateFile(url), printLine: { print($0) }))
/// }
/// print("listening on \(server.baseURL)")
/// ```
public final class RelyingPartyServer: Sendable {
    /// The bound port (the one the system chose when the configuration asked for port 0).
    public let port: Int
    /// `http://HOST:PORT`.
    public let baseURL: String
    /// The service answering requests.
    public let service: RelyingPartyService

    private let serverChannel: any Channel
    private let group: MultiThreadedEventLoopGroup
    private let isShutDown = Mutex(false)

    private init(
        serverChannel: any Channel, group: MultiThreadedEventLoopGroup, service: RelyingPartyService, port: Int,
        baseURL: String
    ) {
        self.serverChannel = serverChannel
        self.group = group
        self.service = service
        self.port = port
        self.baseURL = baseURL
    }

    /// Binds the listening socket, makes the service for the bound port (origins usually name it), then starts
    /// accepting connections.
    public static func start(
        _ configuration: RelyingPartyServerConfiguration,
        makeService: (_ port: Int) throws(RelyingPartyServerError) -> RelyingPartyService
    ) async throws(RelyingPartyServerError) -> RelyingPartyServer {
        guard (0...65535).contains(configuration.port) else {
            throw .invalidConfiguration("port \(configuration.port) is not 0–65535")
        }
        guard configuration.maximumConnections > 0, configuration.maximumBodyBytes >= 0,
            configuration.maximumHeaderFields > 0, configuration.maximumHeaderBytes > 0,
            configuration.idleTimeout > .zero, configuration.requestTimeout > .zero
        else { throw .invalidConfiguration("limits must be positive") }

        let slot = ServiceSlot()
        let table = ConnectionTable(maximum: configuration.maximumConnections)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // Nothing is accepted until the service exists (autoRead is turned on below).
            .serverChannelOption(.autoRead, value: false)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard let service = slot.service, table.admit(channel) else {
                        throw ChannelError.inputClosed  // every connection is in a request: closed at once
                    }
                    channel.closeFuture.whenComplete { _ in table.remove(channel) }
                    try Self.configure(channel, service: service, configuration: configuration, table: table)
                }
            }
        let serverChannel: any Channel
        do {
            serverChannel = try await bootstrap.bind(host: configuration.host, port: configuration.port).get()
        } catch {
            try? await group.shutdownGracefully()
            throw .cannotListen(host: configuration.host, port: configuration.port, reason: "\(error)")
        }
        let port = serverChannel.localAddress?.port ?? configuration.port
        let service: RelyingPartyService
        do throws(RelyingPartyServerError) {
            service = try makeService(port)
        } catch {
            try? await serverChannel.close()
            try? await group.shutdownGracefully()
            throw error
        }
        slot.service = service
        do {
            try await serverChannel.setOption(.autoRead, value: true).get()
        } catch {
            try? await serverChannel.close()
            try? await group.shutdownGracefully()
            throw .cannotListen(host: configuration.host, port: port, reason: "\(error)")
        }
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return RelyingPartyServer(
            serverChannel: serverChannel, group: group, service: service, port: port,
            baseURL: "http://\(host):\(port)")
    }

    /// Stops accepting, closes every connection and stops the event loop. Calling it again does nothing.
    public func shutdown() async {
        let first = isShutDown.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        try? await serverChannel.close()
        try? await group.shutdownGracefully()
    }

    /// The pipeline of an accepted connection: HTTP/1.1 with header limits, then the handler.
    static func configure(
        _ channel: any Channel, service: RelyingPartyService, configuration: RelyingPartyServerConfiguration,
        table: ConnectionTable? = nil
    ) throws {
        let pipeline = channel.pipeline.syncOperations
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldCount = configuration.maximumHeaderFields
        limits.maxHeaderListSize = configuration.maximumHeaderBytes
        limits.maxHeaderFieldSize = configuration.maximumHeaderBytes
        try pipeline.configureHTTPServerPipeline(
            withPipeliningAssistance: true, withServerUpgrade: nil, withErrorHandling: false,
            withOutboundHeaderValidation: true, withEncoderConfiguration: HTTPResponseEncoder.Configuration(),
            withDecoderLimitConfiguration: limits)
        try pipeline.addHandler(
            RelyingPartyHTTPHandler(
                service: service, maximumBodyBytes: configuration.maximumBodyBytes,
                idleTimeout: TimeAmount(configuration.idleTimeout),
                requestTimeout: TimeAmount(configuration.requestTimeout),
                requestStateChanged: table.map { table in { busy in table.setBusy(channel, busy) } }))
    }
}

/// The service, set once after the socket is bound and before the first connection is accepted.
private final class ServiceSlot: Sendable {
    private let value = Mutex<RelyingPartyService?>(nil)

    var service: RelyingPartyService? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}

/// Open connections, against the limit: which are in a request, and since when the others are idle. Idle
/// connections held open by one client (64 of them locked everyone else out, issue 23, attack 2) make room.
final class ConnectionTable: Sendable {
    private struct Entry {
        var channel: any Channel
        /// When the connection was accepted or its last request answered; nil while a request is under way.
        var idleSince: ContinuousClock.Instant?
    }

    private let entries = Mutex<[ObjectIdentifier: Entry]>([:])
    private let maximum: Int

    init(maximum: Int) { self.maximum = maximum }

    /// Connections counted now.
    var count: Int { entries.withLock { $0.count } }

    /// Counts `channel`. At the limit the connection idle the longest is closed to make room; false (not counted)
    /// when every connection is in a request.
    func admit(_ channel: any Channel, now: ContinuousClock.Instant = .now) -> Bool {
        let evicted: (any Channel)? = entries.withLock { entries in
            var evicted: (any Channel)?
            if entries.count >= maximum {
                let idle = entries.compactMap { key, entry in entry.idleSince.map { (key: key, since: $0) } }
                guard let oldest = idle.min(by: { $0.since < $1.since }) else { return nil as (any Channel)? }
                evicted = entries.removeValue(forKey: oldest.key)?.channel
            }
            entries[ObjectIdentifier(channel)] = Entry(channel: channel, idleSince: now)
            return evicted
        }
        evicted?.close(promise: nil)
        return entries.withLock { $0[ObjectIdentifier(channel)] != nil }
    }

    /// A request started (`busy`) or was answered on `channel`.
    func setBusy(_ channel: any Channel, _ busy: Bool, now: ContinuousClock.Instant = .now) {
        entries.withLock { $0[ObjectIdentifier(channel)]?.idleSince = busy ? nil : now }
    }

    func remove(_ channel: any Channel) {
        _ = entries.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
    }
}
