import CTAPHID
import Logging
import NIOCore

/// Connects a datagram channel to a ``CTAPHIDDriver``: each datagram is one report from its sender, and each
/// report the driver sends becomes a datagram to its peer.
///
/// Everything runs on the channel's event loop.
final class CTAPHIDDatagramHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    private let configuration: CTAPHIDUDPServer.Configuration
    private let logger: Logger
    private let wink: WinkHandler?
    private let handler: CBORHandler
    private let now: @Sendable () -> ContinuousClock.Instant
    private var driver: CTAPHIDDriver<SocketAddress>?

    /// - Parameter now: The clock of the protocol's timeouts; tests pass one that follows their event loop.
    init(
        configuration: CTAPHIDUDPServer.Configuration, logger: Logger, wink: WinkHandler?,
        handler: @escaping CBORHandler, now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
    ) {
        self.configuration = configuration
        self.logger = logger
        self.wink = wink
        self.handler = handler
        self.now = now
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        driver = CTAPHIDDriver(
            configuration: configuration.protocolConfiguration,
            tickInterval: configuration.tickInterval,
            eventLoop: context.eventLoop,
            logger: logger,
            wink: wink,
            handler: handler,
            send: { report, peer in
                let context = boundContext.value
                let envelope = AddressedEnvelope(
                    remoteAddress: peer, data: context.channel.allocator.buffer(bytes: report))
                context.write(Self.wrapOutboundOut(envelope), promise: nil)
            },
            flush: { boundContext.value.flush() },
            now: now
        )
        if context.channel.isActive { driver?.start() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        driver?.stop()
        driver = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        driver?.start()
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        driver?.stop()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = Self.unwrapInboundIn(data)
        let report = Array(buffer: envelope.data)
        do {
            try driver?.receive(report: report, from: envelope.remoteAddress)
        } catch {
            logger.debug(
                "Dropped datagram that is not one HID report",
                metadata: ["size": "\(report.count)", "peer": "\(envelope.remoteAddress)"])
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A failed send or receive concerns one datagram; the server keeps serving.
        logger.debug("Socket error", metadata: ["error": "\(error)"])
    }
}

@available(*, unavailable)
extension CTAPHIDDatagramHandler: Sendable {}
