import CTAPHID
import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// Why a host-side CTAPHID connection could not carry an exchange.
public enum CTAPHIDConnectionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The exchange failed in the CTAPHID protocol: the device's error, a timeout, a cancellation, a broken rule.
    case exchange(CTAPHIDHostError)
    /// The connection was closed (by ``CTAPHIDHostConnection/close()``) before or during the exchange.
    case closed
    /// The device went away or its file failed: reading or writing it gave this errno (ENODEV when a key is pulled
    /// out).
    case deviceFailed(operation: String, errno: Int32)

    public var description: String {
        switch self {
        case .exchange(let error): "\(error)"
        case .closed: "the connection to the security key is closed"
        case .deviceFailed(let operation, let code) where code == ENODEV:
            "the security key went away (the \(operation) failed: was it unplugged?)"
        case .deviceFailed(let operation, let code) where code == ECONNREFUSED:
            "\(operation) failed: connection refused (nothing listens there; is `passkey serve --udp` running?)"
        case .deviceFailed(let operation, let code):
            "\(operation) failed: \(String(cString: strerror(code)).lowercased())"
        }
    }
}

/// Drives a ``CTAPHIDHostStateMachine`` for one connection: requests from the caller, reports from the device and
/// the timer go in as events; the actions that come out are carried out here, without further decisions.
///
/// Everything runs on one event loop: the driver must be created, called and closed there. One timer is scheduled
/// at the state machine's ``CTAPHIDHostStateMachine/nextDeadline``. The datagram handler and the hidraw connection
/// share it.
final class CTAPHIDHostDriver {
    typealias Write = (_ report: [UInt8]) -> Void

    /// What the caller waits for.
    private enum Completion {
        case allocation(EventLoopPromise<CTAPHIDDeviceInfo>)
        case exchange(EventLoopPromise<[UInt8]>, onKeepalive: (@Sendable (KeepaliveStatus) -> Void)?)

        func fail(_ error: CTAPHIDConnectionError) {
            switch self {
            case .allocation(let promise): promise.fail(error)
            case .exchange(let promise, _): promise.fail(error)
            }
        }
    }

    private var stateMachine: CTAPHIDHostStateMachine
    private let eventLoop: any EventLoop
    /// Where reports go; `nil` once closed.
    private var write: Write?
    private let flush: () -> Void
    private let now: @Sendable () -> ContinuousClock.Instant
    private let nonce: @Sendable () -> UInt64
    private var completion: Completion?
    private var timer: Scheduled<Void>?
    private var closedBecause: CTAPHIDConnectionError?

    init(
        configuration: CTAPHIDHostStateMachine.Configuration,
        eventLoop: any EventLoop,
        write: @escaping Write,
        flush: @escaping () -> Void = {},
        now: @escaping @Sendable () -> ContinuousClock.Instant,
        nonce: @escaping @Sendable () -> UInt64
    ) {
        stateMachine = CTAPHIDHostStateMachine(configuration: configuration)
        self.eventLoop = eventLoop
        self.write = write
        self.flush = flush
        self.now = now
        self.nonce = nonce
    }

    // MARK: Requests

    /// Allocates a fresh channel, to learn what the device is.
    func allocateChannel(timeout: Duration, promise: EventLoopPromise<CTAPHIDDeviceInfo>) {
        guard admit(fail: { promise.fail($0) }) else { return }
        let start = now()
        do {
            let actions = try stateMachine.allocateChannel(nonce: nonce(), now: start, deadline: start + timeout)
            completion = .allocation(promise)
            perform(actions)
        } catch {
            promise.fail(CTAPHIDConnectionError.exchange(error))
        }
    }

    /// Sends a message and completes `promise` with the response's payload.
    func exchange(
        command: CTAPHIDCommand, payload: [UInt8], timeout: Duration,
        onKeepalive: (@Sendable (KeepaliveStatus) -> Void)?, promise: EventLoopPromise<[UInt8]>
    ) {
        guard admit(fail: { promise.fail($0) }) else { return }
        let start = now()
        do {
            let actions = try stateMachine.send(
                command: command, payload: payload, nonce: nonce(), now: start, deadline: start + timeout)
            completion = .exchange(promise, onKeepalive: onKeepalive)
            perform(actions)
        } catch {
            promise.fail(CTAPHIDConnectionError.exchange(error))
        }
    }

    /// Aborts what is in progress (``CTAPHIDHostStateMachine/cancel(now:)``).
    func cancel() {
        guard write != nil else { return }
        perform(stateMachine.cancel(now: now()))
    }

    /// A report from the device.
    /// - Throws: ``CTAPHIDFramingError/wrongReportSize(_:)`` if it is not 64 bytes; nothing changes then.
    func receive(report: [UInt8]) throws(CTAPHIDFramingError) {
        guard write != nil else { return }
        perform(try stateMachine.receive(report: report, now: now()))
    }

    /// Stops: fails what is in progress with `reason`, and every later request. Closing twice keeps the first
    /// reason.
    func close(_ reason: CTAPHIDConnectionError = .closed) {
        guard closedBecause == nil else { return }
        closedBecause = reason
        write = nil
        timer?.cancel()
        timer = nil
        let waiting = completion
        completion = nil
        waiting?.fail(reason)
    }

    // MARK: Actions

    /// Refuses a request on a closed driver, and one while another is waiting (which the state machine would refuse
    /// as busy too; this keeps the first caller's completion).
    private func admit(fail: (CTAPHIDConnectionError) -> Void) -> Bool {
        if let closedBecause {
            fail(closedBecause)
            return false
        }
        guard completion == nil else {
            fail(.exchange(.busy))
            return false
        }
        return true
    }

    private func perform(_ actions: [CTAPHIDHostStateMachine.Action]) {
        var wrote = false
        for action in actions {
            switch action {
            case .send(let report):
                write?(report)
                wrote = true
            case .channelAllocated(let info):
                if case .allocation(let promise) = completion {
                    completion = nil
                    promise.succeed(info)
                }
            case .keepalive(let status):
                if case .exchange(_, let onKeepalive) = completion { onKeepalive?(status) }
            case .response(_, let payload):
                if case .exchange(let promise, _) = completion {
                    completion = nil
                    promise.succeed(payload)
                }
            case .failed(let error):
                let waiting = completion
                completion = nil
                waiting?.fail(.exchange(error))
            }
        }
        if wrote { flush() }
        reschedule()
    }

    /// One timer, at the state machine's next deadline.
    private func reschedule() {
        timer?.cancel()
        timer = nil
        guard write != nil, let deadline = stateMachine.nextDeadline else { return }
        let delay = max(.zero, deadline - now())
        let this = NIOLoopBound(self, eventLoop: eventLoop)
        timer = eventLoop.scheduleTask(in: TimeAmount(delay)) { this.value.expire() }
    }

    private func expire() {
        timer = nil
        guard write != nil else { return }
        perform(stateMachine.tick(now: now()))
    }
}

@available(*, unavailable)
extension CTAPHIDHostDriver: Sendable {}
