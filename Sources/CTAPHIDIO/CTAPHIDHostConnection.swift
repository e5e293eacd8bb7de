import CTAPHID
import NIOCore
import NIOPosix
import Synchronization

/// A platform's CTAPHID connection to one security key: over UDP to `passkey serve --udp` (one datagram per
/// report), or through a Linux hidraw node to a real key or `passkey serve --uhid`.
///
/// Exchanges run one at a time; each has a timeout, and cancelling the waiting task cancels the exchange on the
/// device (`CTAPHID_CANCEL` for CBOR requests). A channel is allocated with the first exchange, and again after an
/// exchange failed.
///
/// ```swift
/// let connection = try CTAPHIDHostConnection.hidraw(path: "/dev/hidraw3")
/// let info = try await connection.exchange(.cbor, payload: [0x04], timeout: .seconds(5))   // getInfo
/// await connection.close()
/// ```
public final class CTAPHIDHostConnection: Sendable, CustomStringConvertible {
    /// Settings of a connection.
    public struct Configuration: Sendable {
        /// The CTAPHID rules' settings (the grace period after a cancel).
        public var protocolConfiguration = CTAPHIDHostStateMachine.Configuration()

        /// The default configuration.
        public init() {}
    }

    private enum Link: Sendable {
        /// UDP: the driver lives in the channel's ``CTAPHIDHostDatagramHandler``.
        case datagram(any Channel)
        /// hidraw: the driver runs on an event loop, the device file on its own thread.
        case hidraw(HidrawDevice, NIOLoopBoundBox<CTAPHIDHostDriver>, finished: EventLoopPromise<Void>)
    }

    private let link: Link
    /// Where the key is: `udp://127.0.0.1:8111` or `/dev/hidraw3`.
    public let description: String

    private init(link: Link, description: String) {
        self.link = link
        self.description = description
    }

    // MARK: Opening

    /// Connects to a CTAPHID device listening for UDP datagrams, such as `passkey serve --udp`.
    ///
    /// - Throws: the resolver's or socket's error.
    public static func udp(
        host: String, port: Int, configuration: Configuration = Configuration(),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> CTAPHIDHostConnection {
        let device = try SocketAddress.makeAddressResolvingHost(host, port: port)
        let local = device.protocol == .inet6 ? "::" : "0.0.0.0"
        let channel = try await DatagramBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        CTAPHIDHostDatagramHandler(device: device, configuration: configuration.protocolConfiguration))
                }
            }
            .bind(host: local, port: 0)
            .get()
        // Connected, so that the kernel drops datagrams from elsewhere and reports ECONNREFUSED when nothing listens.
        do {
            try await channel.connect(to: device).get()
        } catch {
            try? await channel.close()
            throw error
        }
        return CTAPHIDHostConnection(link: .datagram(channel), description: "udp://\(host):\(port)")
    }

    /// Opens a hidraw node (`/dev/hidrawN`) of a FIDO security key.
    ///
    /// - Throws: ``HidrawOpenError``: no such node, no permission (with what to change), not a FIDO device.
    public static func hidraw(
        path: String, configuration: Configuration = Configuration(),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) throws(HidrawOpenError) -> CTAPHIDHostConnection {
        try hidraw(device: HidrawDevice.open(path: path), configuration: configuration, eventLoop: group.next())
    }

    /// A connection over an open device file; tests pass one end of a socket pair and their own clock.
    static func hidraw(
        device: HidrawDevice, configuration: Configuration, eventLoop: any EventLoop,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now },
        nonce: @escaping @Sendable () -> UInt64 = { UInt64.random(in: .min ... .max) }
    ) -> CTAPHIDHostConnection {
        // Made here and moved into a box bound to its event loop, where it is used from then on.
        let bound = NIOLoopBoundBox.makeBoxSendingValue(
            CTAPHIDHostDriver(
                configuration: configuration.protocolConfiguration, eventLoop: eventLoop,
                write: { report in device.write(report: report) }, now: now, nonce: nonce),
            eventLoop: eventLoop)
        let finished = eventLoop.makePromise(of: Void.self)
        device.start(
            HidrawDevice.Callbacks(
                report: { report in eventLoop.execute { try? bound.value.receive(report: report) } },
                end: { failure in
                    eventLoop.execute {
                        bound.value.close(failure ?? .closed)
                        finished.succeed()
                    }
                }))
        return CTAPHIDHostConnection(
            link: .hidraw(device, bound, finished: finished), description: device.path)
    }

    // MARK: Exchanges

    /// Allocates a fresh channel and returns what the device says about itself (its capabilities among it).
    /// - Throws: ``CTAPHIDConnectionError``.
    public func allocateChannel(timeout: Duration) async throws(CTAPHIDConnectionError) -> CTAPHIDDeviceInfo {
        let promise = eventLoop.makePromise(of: CTAPHIDDeviceInfo.self)
        return try await wait(for: promise) { .allocateChannel(timeout: timeout, promise: promise) }
    }

    /// Sends one message and returns the payload of the device's response.
    ///
    /// - Parameters:
    ///   - command: PING, WINK, CBOR, MSG, LOCK or a vendor command.
    ///   - payload: At most 7609 bytes (for CBOR: the CTAP command byte and CBOR parameters).
    ///   - timeout: How long the device may take, user presence included.
    ///   - onKeepalive: Called with every `CTAPHID_KEEPALIVE` status, on an event loop: it must return at once.
    /// - Throws: ``CTAPHIDConnectionError``; cancelling the task cancels the exchange, which then ends with the
    ///   device's answer (for CBOR, usually CTAP2_ERR_KEEPALIVE_CANCEL) or ``CTAPHIDHostError/cancelled``.
    public func exchange(
        _ command: CTAPHIDCommand, payload: [UInt8], timeout: Duration,
        onKeepalive: (@Sendable (KeepaliveStatus) -> Void)? = nil
    ) async throws(CTAPHIDConnectionError) -> [UInt8] {
        let promise = eventLoop.makePromise(of: [UInt8].self)
        return try await wait(for: promise) {
            .exchange(command: command, payload: payload, timeout: timeout, onKeepalive: onKeepalive, promise: promise)
        }
    }

    /// Cancels the exchange in progress, if any (see ``exchange(_:payload:timeout:onKeepalive:)``).
    public func cancel() {
        submit(.cancel)
    }

    /// Closes the socket or device file; an exchange in progress fails with ``CTAPHIDConnectionError/closed``.
    /// Closing twice is harmless.
    public func close() async {
        switch link {
        case .datagram(let channel):
            try? await channel.close()
        case .hidraw(let device, _, let finished):
            device.close()
            try? await finished.futureResult.get()
        }
    }

    // MARK: Plumbing

    private var eventLoop: any EventLoop {
        switch link {
        case .datagram(let channel): channel.eventLoop
        case .hidraw(_, let driver, _): driver.eventLoop
        }
    }

    private func submit(_ request: CTAPHIDHostRequest) {
        switch link {
        case .datagram(let channel):
            channel.writeAndFlush(request).whenFailure { _ in request.fail(.closed) }
        case .hidraw(_, let driver, _):
            driver.eventLoop.execute { driver.value.handle(request) }
        }
    }

    private func wait<Value: Sendable>(
        for promise: EventLoopPromise<Value>, _ request: () -> CTAPHIDHostRequest
    ) async throws(CTAPHIDConnectionError) -> Value {
        submit(request())
        do {
            return try await withTaskCancellationHandler {
                try await promise.futureResult.get()
            } onCancel: {
                self.cancel()
            }
        } catch let error as CTAPHIDConnectionError {
            throw error
        } catch {
            throw .closed
        }
    }
}
