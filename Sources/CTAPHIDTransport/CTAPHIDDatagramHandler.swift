import CTAPHID
import Logging
import NIOCore

/// Connects a datagram channel to a ``CTAPHIDStateMachine``: datagrams, ticks and the authenticator's answers
/// go in as events; the actions that come out are carried out here, without further decisions.
///
/// Everything runs on the channel's event loop. Authenticator requests run in `Task`s, which report back by
/// scheduling onto the event loop.
final class CTAPHIDDatagramHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>

    private struct RunningRequest {
        var task: Task<Void, Never>
        var started: ContinuousClock.Instant
        var command: UInt8
        var requestSize: Int
        var cancelled = false
    }

    private var stateMachine: CTAPHIDStateMachine<SocketAddress>
    private let tickInterval: TimeAmount
    private let logger: Logger
    private let wink: WinkHandler?
    private let handler: CBORHandler
    private var context: ChannelHandlerContext?
    private var ticker: RepeatedTask?
    private var running: [CBORTransactionID: RunningRequest] = [:]

    init(
        configuration: CTAPHIDUDPServer.Configuration, logger: Logger, wink: WinkHandler?,
        handler: @escaping CBORHandler
    ) {
        self.stateMachine = CTAPHIDStateMachine(configuration: configuration.protocolConfiguration)
        self.tickInterval = TimeAmount(configuration.tickInterval)
        self.logger = logger
        self.wink = wink
        self.handler = handler
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { startTicking(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        stop()
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        startTicking(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stop()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = Self.unwrapInboundIn(data)
        let report = Array(buffer: envelope.data)
        do {
            perform(try stateMachine.receive(report: report, from: envelope.remoteAddress, now: .now))
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

    // MARK: Events from timers and tasks

    private func startTicking(context: ChannelHandlerContext) {
        guard ticker == nil else { return }
        let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
        ticker = context.eventLoop.scheduleRepeatedTask(initialDelay: tickInterval, delay: tickInterval) { _ in
            handler.value.tick()
        }
    }

    private func tick() {
        perform(stateMachine.tick(now: .now))
    }

    private func keepaliveStatusChanged(_ status: KeepaliveStatus, for transaction: CBORTransactionID) {
        perform(stateMachine.keepaliveStatus(status, for: transaction, now: .now))
    }

    private func requestCompleted(_ response: [UInt8], for transaction: CBORTransactionID) {
        if let request = running.removeValue(forKey: transaction) {
            let milliseconds = (ContinuousClock.now - request.started) / .milliseconds(1)
            logger.debug(
                "CTAPHID CBOR transaction",
                metadata: [
                    "channel": "\(transaction.channel)",
                    "command": "\(hex(request.command))",
                    "status": "\(response.first.map(hex) ?? "none")",
                    "requestSize": "\(request.requestSize)",
                    "responseSize": "\(response.count)",
                    "cancelled": "\(request.cancelled)",
                    "milliseconds": "\(Int(milliseconds))",
                ])
        }
        perform(stateMachine.cborResponse(response, for: transaction, now: .now))
    }

    private func stop() {
        ticker?.cancel()
        ticker = nil
        for request in running.values { request.task.cancel() }
        running = [:]
    }

    // MARK: Actions

    private func perform(_ actions: [CTAPHIDStateMachine<SocketAddress>.Action]) {
        guard let context, !actions.isEmpty else { return }
        var wrote = false
        for action in actions {
            switch action {
            case .send(let report, let peer):
                logReply(report, to: peer)
                let envelope = AddressedEnvelope(
                    remoteAddress: peer, data: context.channel.allocator.buffer(bytes: report))
                context.write(Self.wrapOutboundOut(envelope), promise: nil)
                wrote = true
            case .dispatchCBOR(let transaction, let request):
                dispatch(request, for: transaction, context: context)
            case .cancel(let transaction):
                logger.debug("Cancelling CBOR request", metadata: ["channel": "\(transaction.channel)"])
                running[transaction]?.cancelled = true
                running[transaction]?.task.cancel()
            case .wink(let channel):
                logger.debug("Wink", metadata: ["channel": "\(channel)"])
                wink?()
            }
        }
        if wrote { context.flush() }
    }

    private func dispatch(_ request: [UInt8], for transaction: CBORTransactionID, context: ChannelHandlerContext) {
        let eventLoop = context.eventLoop
        let this = NIOLoopBound(self, eventLoop: eventLoop)
        let handler = self.handler
        let task = Task {
            let response = await handler(request) { status in
                eventLoop.execute { this.value.keepaliveStatusChanged(status, for: transaction) }
            }
            eventLoop.execute { this.value.requestCompleted(response, for: transaction) }
        }
        running[transaction] = RunningRequest(
            task: task, started: .now, command: request.first ?? 0, requestSize: request.count)
    }

    /// One line per reply that ends a transaction (keepalives and CBOR responses are not; the latter are
    /// logged with their request). Only header fields and error codes are logged, never payload bytes.
    private func logReply(_ report: [UInt8], to peer: SocketAddress) {
        guard logger.logLevel <= .debug, let packet = try? CTAPHIDPacket(report: report),
            case .initialization(let command, let length) = packet.kind, command != .keepalive, command != .cbor
        else { return }
        var metadata: Logger.Metadata = [
            "channel": "\(packet.channel)", "command": "\(command)", "length": "\(length)", "peer": "\(peer)",
        ]
        if command == .error, let code = packet.data.first { metadata["error"] = "\(hex(code))" }
        logger.debug("CTAPHID reply", metadata: metadata)
    }
}

@available(*, unavailable)
extension CTAPHIDDatagramHandler: Sendable {}

private func hex(_ byte: UInt8) -> String {
    let digits = String(byte, radix: 16)
    return "0x" + (digits.count == 1 ? "0" : "") + digits
}
