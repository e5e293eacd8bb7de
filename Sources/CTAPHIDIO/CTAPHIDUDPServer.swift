import CTAPHID
import Logging
import NIOCore
import NIOPosix

/// The authenticator behind the transport.
///
/// It receives the payload of a `CTAPHID_CBOR` request (the CTAP command byte followed by CBOR) and returns the
/// CTAP response (a status byte, then CBOR). It runs in its own `Task`, which is cancelled when the host sends
/// `CTAPHID_CANCEL` or resynchronizes the channel; it should then return promptly, with
/// CTAP2_ERR_KEEPALIVE_CANCEL (0x2D) if it was waiting for the user. `setKeepaliveStatus` reports what it waits
/// for; the transport tells the host in `CTAPHID_KEEPALIVE` packets.
public typealias CBORHandler =
    @Sendable (_ request: [UInt8], _ setKeepaliveStatus: @escaping @Sendable (KeepaliveStatus) -> Void) async -> [UInt8]

/// Called when the host sends `CTAPHID_WINK`, on the server's event loop: it must return at once.
public typealias WinkHandler = @Sendable () -> Void

/// Why the server cannot start.
public enum CTAPHIDUDPServerError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The address is not a loopback address: an authenticator must not be reachable from the network.
    case notLoopback(String)

    public var description: String {
        switch self {
        case .notLoopback(let host):
            "\(host) is not a loopback address: the authenticator only listens on loopback (for example 127.0.0.1)"
        }
    }
}

/// CTAPHID over UDP on the loopback interface: each datagram is one 64-byte HID report.
///
/// Hosts talk to it as to a USB security key whose reports travel in datagrams (for example python-fido2's
/// `CtapHidDevice` over a custom connection). Replies go to the address that sent the request. Datagrams of
/// any size other than 64 bytes are dropped.
///
/// ```swift
/// let server = try await CTAPHIDUDPServer.start(host: "127.0.0.1", port: 8111) { request, setStatus in
///     await authenticator.handle(request, setStatus)
/// }
/// try await server.run()
/// ```
public final class CTAPHIDUDPServer: Sendable {
    /// Settings of the server.
    public struct Configuration: Sendable {
        /// Timeouts, channel limit and device version of the CTAPHID layer.
        public var protocolConfiguration = CTAPHIDStateMachine<SocketAddress>.Configuration()
        /// How often the server checks for due keepalives and timeouts (default 50 ms).
        public var tickInterval: Duration = .milliseconds(50)

        /// The default configuration.
        public init() {}
    }

    /// The address the server is bound to; with port 0, the port the system chose.
    public let localAddress: SocketAddress
    private let channel: any Channel

    private init(channel: any Channel, localAddress: SocketAddress) {
        self.channel = channel
        self.localAddress = localAddress
    }

    /// Binds a server to a loopback address and starts answering.
    ///
    /// - Parameters:
    ///   - host: A loopback address, such as `127.0.0.1` or `::1`.
    ///   - port: The UDP port; 0 lets the system choose (see ``localAddress``).
    ///   - configuration: Protocol timeouts and limits.
    ///   - group: The event loop group to run on.
    ///   - logger: Receives one debug line per transaction; never payload bytes.
    ///   - wink: Called for `CTAPHID_WINK`, if given.
    ///   - handler: The authenticator.
    /// - Throws: ``CTAPHIDUDPServerError/notLoopback(_:)``, or the socket error of the bind.
    public static func start(
        host: String,
        port: Int,
        configuration: Configuration = Configuration(),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "passkey.ctaphid"),
        wink: WinkHandler? = nil,
        handler: @escaping CBORHandler
    ) async throws -> CTAPHIDUDPServer {
        let address = try loopbackAddress(host: host, port: port)
        let channel = try await DatagramBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let datagramHandler = CTAPHIDDatagramHandler(
                        configuration: configuration, logger: logger, wink: wink, handler: handler)
                    try channel.pipeline.syncOperations.addHandler(datagramHandler)
                }
            }
            .bind(to: address)
            .get()
        let localAddress = channel.localAddress ?? address
        logger.info("CTAPHID UDP server listening", metadata: ["address": "\(localAddress)"])
        return CTAPHIDUDPServer(channel: channel, localAddress: localAddress)
    }

    /// Waits until the server is closed; cancelling the waiting task closes the server.
    public func run() async throws {
        let channel = self.channel
        try await withTaskCancellationHandler {
            try await channel.closeFuture.get()
        } onCancel: {
            channel.close(promise: nil)
        }
    }

    /// Closes the socket and cancels every request still being processed. Closing twice is harmless.
    public func close() async {
        try? await channel.close()
    }
}

extension CTAPHIDUDPServer {
    /// Resolves `host` and checks it is a loopback address, the only kind the server binds to.
    /// - Throws: ``CTAPHIDUDPServerError/notLoopback(_:)``, or the resolver's error.
    public static func loopbackAddress(host: String, port: Int) throws -> SocketAddress {
        let address = try SocketAddress.makeAddressResolvingHost(host, port: port)
        guard address.isLoopback else { throw CTAPHIDUDPServerError.notLoopback(host) }
        return address
    }
}

extension SocketAddress {
    /// Whether this is an address in 127.0.0.0/8 or `::1`.
    fileprivate var isLoopback: Bool {
        switch self {
        case .v4: ipAddress?.hasPrefix("127.") ?? false
        case .v6: ipAddress == "::1"
        case .unixDomainSocket: false
        }
    }
}
