import Basics

import CTAPHID
import Logging
import NIOCore

/// Drives a ``CTAPHIDStateMachine`` for one transport: reports, ticks and the authenticator's answers go in as
/// events; the actions that come out are carried out here, without further decisions.
///
/// The transport feeds it reports with ``receive(report:from:)`` and carries its outgoing reports (the `send`
/// closure). Everything runs on one event loop: the driver must be created, called and stopped there. Authenticator
/// requests run in `Task`s, which report back by scheduling onto the event loop. The UDP server and the uhid device
/// share it.
final class CTAPHIDDriver<Peer: Hashable & Sendable & CustomStringConvertible> {
    typealias Send = (_ report: [UInt8], _ peer: Peer) -> Void

    private struct RunningRequest {
        var task: Task<Void, Never>
        var started: ContinuousClock.Instant
        var command: UInt8
        var requestSize: Int
        var cancelled = false
    }

    private var stateMachine: CTAPHIDStateMachine<Peer>
    private let eventLoop: any EventLoop
    private let tickInterval: TimeAmount
    private let logger: Logger
    private let wink: WinkHandler?
    private let handler: CBORHandler
    private var ticker: RepeatedTask?
    private var running: [CBORTransactionID: RunningRequest] = [:]
    /// Where outgoing reports go; `nil` once stopped.
    private var send: Send?
    /// Called after the reports of one event have been sent.
    private let flush: () -> Void
    /// The time the state machine is given with each event.
    private let now: @Sendable () -> ContinuousClock.Instant

    init(
        configuration: CTAPHIDStateMachine<Peer>.Configuration,
        tickInterval: Duration,
        eventLoop: any EventLoop,
        logger: Logger,
        wink: WinkHandler?,
        handler: @escaping CBORHandler,
        send: @escaping Send,
        flush: @escaping () -> Void = {},
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
    ) {
        self.stateMachine = CTAPHIDStateMachine(configuration: configuration)
        self.tickInterval = TimeAmount(tickInterval)
        self.eventLoop = eventLoop
        self.logger = logger
        self.wink = wink
        self.handler = handler
        self.send = send
        self.flush = flush
        self.now = now
    }

    /// Starts the timer for keepalives and timeouts. Starting twice is harmless.
    func start() {
        guard ticker == nil, send != nil else { return }
        let this = NIOLoopBound(self, eventLoop: eventLoop)
        ticker = eventLoop.scheduleRepeatedTask(initialDelay: tickInterval, delay: tickInterval) { _ in
            this.value.tick()
        }
    }

    /// Stops the timer, cancels every running request and sends nothing more. Stopping twice is harmless.
    func stop() {
        ticker?.cancel()
        ticker = nil
        send = nil
        for request in running.values { request.task.cancel() }
        running = [:]
    }

    /// A report from the host.
    /// - Throws: ``CTAPHIDFramingError/wrongReportSize(_:)`` if it is not 64 bytes; nothing changes then.
    func receive(report: [UInt8], from peer: Peer) throws(CTAPHIDFramingError) {
        perform(try stateMachine.receive(report: report, from: peer, now: now()))
    }

    /// The last program that had the device open closed it: a request still running is cancelled.
    func hostClosed() {
        perform(stateMachine.hostClosed(now: now()))
    }

    // MARK: Events from timers and tasks

    private func tick() {
        perform(stateMachine.tick(now: now()))
    }

    private func keepaliveStatusChanged(_ status: KeepaliveStatus, for transaction: CBORTransactionID) {
        perform(stateMachine.keepaliveStatus(status, for: transaction, now: now()))
    }

    private func requestCompleted(_ response: [UInt8], for transaction: CBORTransactionID) {
        if let request = running.removeValue(forKey: transaction) {
            let milliseconds = (now() - request.started) / .milliseconds(1)
            logger.debug(
                "CTAPHID CBOR transaction",
                metadata: [
                    "channel": "\(transaction.channel)",
                    "command": "0x\(request.command.hexDigits(2))",
                    "status": response.first.map { "0x\($0.hexDigits(2))" } ?? "none",
                    "requestSize": "\(request.requestSize)",
                    "responseSize": "\(response.count)",
                    "cancelled": "\(request.cancelled)",
                    "milliseconds": "\(Int(milliseconds))",
                ])
        }
        perform(stateMachine.cborResponse(response, for: transaction, now: now()))
    }

    // MARK: Actions

    private func perform(_ actions: [CTAPHIDStateMachine<Peer>.Action]) {
        guard let send, !actions.isEmpty else { return }
        var wrote = false
        for action in actions {
            switch action {
            case .send(let report, let peer):
                logReply(report, to: peer)
                send(report, peer)
                wrote = true
            case .dispatchCBOR(let transaction, let request):
                dispatch(request, for: transaction)
            case .cancel(let transaction):
                logger.debug("Cancelling CBOR request", metadata: ["channel": "\(transaction.channel)"])
                running[transaction]?.cancelled = true
                running[transaction]?.task.cancel()
            case .wink(let channel):
                logger.debug("Wink", metadata: ["channel": "\(channel)"])
                wink?()
            }
        }
        if wrote { flush() }
    }

    private func dispatch(_ request: [UInt8], for transaction: CBORTransactionID) {
        let eventLoop = self.eventLoop
        let this = NIOLoopBound(self, eventLoop: eventLoop)
        let handler = self.handler
        let task = Task {
            let response = await handler(request) { status in
                eventLoop.execute { this.value.keepaliveStatusChanged(status, for: transaction) }
            }
            eventLoop.execute { this.value.requestCompleted(response, for: transaction) }
        }
        running[transaction] = RunningRequest(
            task: task, started: now(), command: request.first ?? 0, requestSize: request.count)
    }

    /// One line per reply that ends a transaction (keepalives and CBOR responses are not; the latter are
    /// logged with their request). Only header fields and error codes are logged, never payload bytes.
    private func logReply(_ report: [UInt8], to peer: Peer) {
        guard logger.logLevel <= .debug, let packet = try? CTAPHIDPacket(report: report),
            case .initialization(let command, let length) = packet.kind, command != .keepalive, command != .cbor
        else { return }
        var metadata: Logger.Metadata = [
            "channel": "\(packet.channel)", "command": "\(command)", "length": "\(length)", "peer": "\(peer)",
        ]
        if command == .error, let code = packet.data.first { metadata["error"] = "0x\(code.hexDigits(2))" }
        logger.debug("CTAPHID reply", metadata: metadata)
    }
}

@available(*, unavailable)
extension CTAPHIDDriver: Sendable {}
