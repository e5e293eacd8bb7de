import CTAPHID
import NIOCore

/// What the caller of a host connection asks for. Written into the UDP channel (where
/// ``CTAPHIDHostDatagramHandler`` takes it) or handed to the hidraw connection's driver.
enum CTAPHIDHostRequest: Sendable {
    /// Allocate a fresh channel; the promise gets the device's description.
    case allocateChannel(timeout: Duration, promise: EventLoopPromise<CTAPHIDDeviceInfo>)
    /// Send a message; the promise gets the response's payload.
    case exchange(
        command: CTAPHIDCommand, payload: [UInt8], timeout: Duration,
        onKeepalive: (@Sendable (KeepaliveStatus) -> Void)?, promise: EventLoopPromise<[UInt8]>)
    /// Abort what is in progress.
    case cancel

    /// Fails the request's promise, if it has one.
    func fail(_ error: CTAPHIDConnectionError) {
        switch self {
        case .allocateChannel(_, let promise): promise.fail(error)
        case .exchange(_, _, _, _, let promise): promise.fail(error)
        case .cancel: break
        }
    }
}

extension CTAPHIDHostDriver {
    /// Carries out one request.
    func handle(_ request: CTAPHIDHostRequest) {
        switch request {
        case .allocateChannel(let timeout, let promise):
            allocateChannel(timeout: timeout, promise: promise)
        case .exchange(let command, let payload, let timeout, let onKeepalive, let promise):
            exchange(command: command, payload: payload, timeout: timeout, onKeepalive: onKeepalive, promise: promise)
        case .cancel:
            cancel()
        }
    }
}

/// The host's end of CTAPHID over UDP: requests are written into the channel, each report the driver sends
/// becomes one datagram to the device, and each 64-byte datagram from the device is one report
/// (as ``CTAPHIDUDPServer`` frames them). Datagrams from any other address, or of another size, are dropped.
///
/// A socket error (ECONNREFUSED when nothing listens at the device's address) closes the driver with that error.
/// Everything runs on the channel's event loop.
final class CTAPHIDHostDatagramHandler: ChannelDuplexHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundIn = CTAPHIDHostRequest
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    private let device: SocketAddress
    private let configuration: CTAPHIDHostStateMachine.Configuration
    private let now: @Sendable () -> ContinuousClock.Instant
    private let nonce: @Sendable () -> UInt64
    private var driver: CTAPHIDHostDriver?
    /// Datagrams dropped because they came from elsewhere or were not one report.
    private(set) var droppedDatagrams = 0

    /// - Parameters:
    ///   - device: Where the device listens; replies must come from there.
    ///   - now: The clock of the exchanges' deadlines; tests pass one that follows their event loop.
    ///   - nonce: Eight random bytes for each channel allocation.
    init(
        device: SocketAddress, configuration: CTAPHIDHostStateMachine.Configuration,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now },
        nonce: @escaping @Sendable () -> UInt64 = { UInt64.random(in: .min ... .max) }
    ) {
        self.device = device
        self.configuration = configuration
        self.now = now
        self.nonce = nonce
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        let device = self.device
        driver = CTAPHIDHostDriver(
            configuration: configuration,
            eventLoop: context.eventLoop,
            write: { report in
                let context = boundContext.value
                let envelope = AddressedEnvelope(
                    remoteAddress: device, data: context.channel.allocator.buffer(bytes: report))
                context.write(Self.wrapOutboundOut(envelope), promise: nil)
            },
            flush: { boundContext.value.flush() },
            now: now,
            nonce: nonce)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        driver?.close()
        driver = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        driver?.close()
        context.fireChannelInactive()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let request = Self.unwrapOutboundIn(data)
        guard let driver else {
            request.fail(.closed)
            promise?.fail(ChannelError.ioOnClosedChannel)
            return
        }
        driver.handle(request)
        promise?.succeed()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = Self.unwrapInboundIn(data)
        guard envelope.remoteAddress == device, envelope.data.readableBytes == CTAPHIDPacket.reportSize else {
            droppedDatagrams += 1
            return
        }
        // 64 bytes, so this cannot throw.
        try? driver?.receive(report: Array(buffer: envelope.data))
    }

    /// `127.0.0.1:8765` or `[::1]:8765`, not NIO's `[IPv4]127.0.0.1/127.0.0.1:8765`.
    static func hostAndPort(_ address: SocketAddress) -> String {
        guard let ip = address.ipAddress, let port = address.port else { return "the device" }
        return ip.contains(":") ? "[\(ip)]:\(port)" : "\(ip):\(port)"
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let code = (error as? IOError)?.errnoCode ?? 0
        driver?.close(.deviceFailed(operation: "UDP to \(Self.hostAndPort(device))", errno: code))
        context.close(promise: nil)
    }
}

@available(*, unavailable)
extension CTAPHIDHostDatagramHandler: Sendable {}
