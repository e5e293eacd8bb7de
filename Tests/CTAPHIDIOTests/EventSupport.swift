import Logging
import NIOCore
import Synchronization
import Testing

/// A one-shot event that tests and handlers wait for instead of polling: ``open()`` once, ``wait()`` anywhere.
final class Gate: Sendable {
    private struct State {
        var isOpen = false
        var nextWaiter = 0
        var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        /// Waiters whose task was cancelled before they could register.
        var cancelled: Set<Int> = []
    }

    private let state = Mutex(State())

    var isOpen: Bool { state.withLock { $0.isOpen } }

    /// Opens the gate: every waiter, present and future, goes on.
    func open() {
        let waiters = state.withLock { state in
            state.isOpen = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// Waits until the gate opens (`true`) or the waiting task is cancelled (`false`), whichever comes first.
    @discardableResult
    func wait() async -> Bool {
        let id = state.withLock { state in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let answer: Bool? = state.withLock { state in
                    if state.isOpen { return true }
                    if state.cancelled.remove(id) != nil { return false }
                    state.waiters[id] = continuation
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                guard let waiter = state.waiters.removeValue(forKey: id) else {
                    state.cancelled.insert(id)
                    return nil as CheckedContinuation<Bool, Never>?
                }
                return waiter
            }
            waiter?.resume(returning: false)
        }
    }
}

/// A logger that drops everything: the failures these tests provoke on purpose are not news.
let quietLogger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

/// A continuous-clock reading that follows `loop`'s time, so that advancing an embedded or testing event loop moves
/// the transport's timeouts along with its timers.
func clock(following loop: some EventLoop) -> @Sendable () -> ContinuousClock.Instant {
    let origin = ContinuousClock.now
    let start = loop.now
    return { origin.advanced(by: .nanoseconds(Int64(loop.now.uptimeNanoseconds - start.uptimeNanoseconds))) }
}

/// A message as the host reassembles it from reports: where it went, its channel, command and payload.
struct Reply<Peer: Equatable>: Equatable {
    var peer: Peer
    var channel: UInt32
    var command: UInt8
    var payload: [UInt8]
}

/// Reassembles reports into messages, in order; a report that does not continue the message before it is an issue.
func reassemble<Peer: Equatable>(
    _ reports: [(peer: Peer, report: [UInt8])],
    sourceLocation: SourceLocation = #_sourceLocation
) -> [Reply<Peer>] {
    var replies: [Reply<Peer>] = []
    var index = 0
    while index < reports.count {
        let (peer, first) = reports[index]
        index += 1
        guard first.count == 64, first[4] & 0x80 != 0 else {
            Issue.record("expected a 64-byte initialization packet, got \(first)", sourceLocation: sourceLocation)
            return replies
        }
        let channel = first[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let length = Int(first[5]) << 8 | Int(first[6])
        var payload = Array(first[7..<(7 + min(57, length))])
        var sequence: UInt8 = 0
        while payload.count < length {
            guard index < reports.count, reports[index].peer == peer, reports[index].report.count == 64,
                Array(reports[index].report.prefix(5)) == bigEndian(channel) + [sequence]
            else {
                Issue.record("message on channel \(channel) incomplete", sourceLocation: sourceLocation)
                return replies
            }
            let next = reports[index].report
            payload += next[5..<(5 + min(59, length - payload.count))]
            index += 1
            sequence += 1
        }
        replies.append(Reply(peer: peer, channel: channel, command: first[4] & 0x7F, payload: payload))
    }
    return replies
}

/// A CTAPHID error reply.
func errorReply<Peer: Equatable>(_ code: UInt8, channel: UInt32, to peer: Peer) -> Reply<Peer> {
    Reply(peer: peer, channel: channel, command: 0x3F, payload: [code])
}
