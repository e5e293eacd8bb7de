import Hybrid
import HybridDriver
import HybridIO
import Synchronization

/// A relay's wake channel (`/cable/listen`) in memory: each connection opens with a challenge, then answers a
/// registration with a fixed contact ID and a revocation with `revoked`; a listen is refused with 4410 when the relay
/// has forgotten the contact, and otherwise answered `listening`, after which the connection stays silent until it is
/// closed. Records every message the phone sent.
final class ScriptedListenerRelay: Sendable {
    static let contactID: [UInt8] = [0x0A, 0x0B, 0x0C] + [UInt8](repeating: 0x42, count: 29)

    private struct State {
        var received: [ListenerMessage] = []
        var forgotten: Bool
        var connections = 0
    }

    private let state: Mutex<State>

    init(forgotten: Bool = false) {
        state = Mutex(State(forgotten: forgotten))
    }

    var received: [ListenerMessage] { state.withLock { $0.received } }
    var connections: Int { state.withLock { $0.connections } }

    func open() -> any HybridTunnel {
        state.withLock { $0.connections += 1 }
        return Connection(relay: self)
    }

    /// The relay's answers to one message from the phone; a close code ends the connection with it.
    fileprivate func answer(_ message: ListenerMessage) -> (messages: [ListenerMessage], close: UInt16?) {
        state.withLock { state in
            state.received.append(message)
            switch message {
            case .register: return ([.registered(contactID: Self.contactID)], nil)
            case .revoke: return state.forgotten ? ([], ListenerCloseCode.unknownContact) : ([.revoked], nil)
            case .listen: return state.forgotten ? ([], ListenerCloseCode.unknownContact) : ([.listening], nil)
            default: return ([], ListenerCloseCode.badMessage)
            }
        }
    }

    /// One WebSocket to the wake channel.
    final class Connection: HybridTunnel {
        private struct State {
            var queue: [ListenerMessage] = [.challenge([UInt8](repeating: 7, count: 32), heartbeatSeconds: 30)]
            var close: UInt16?
            var closed = false
            var waiter: CheckedContinuation<Void, Never>?
        }

        let relay: ScriptedListenerRelay
        private let state = Mutex(State())
        let routingIDHeader: String? = nil

        init(relay: ScriptedListenerRelay) { self.relay = relay }

        func send(_ message: [UInt8]) async throws(TunnelError) {
            guard let decoded = try? ListenerMessage(bytes: message) else { throw .closedByRelay(code: 4400) }
            let (messages, close) = relay.answer(decoded)
            let waiter = state.withLock { state in
                state.queue += messages
                state.close = close
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }

        func receive(timeout: Duration?) async throws(TunnelError) -> [UInt8]? {
            while true {
                enum Next {
                    case message(ListenerMessage)
                    case close(UInt16)
                    case end
                    case wait
                }
                let next = state.withLock { state -> Next in
                    if !state.queue.isEmpty { return .message(state.queue.removeFirst()) }
                    if let code = state.close { return .close(code) }
                    return state.closed ? .end : .wait
                }
                switch next {
                case .message(let message): return message.bytes
                case .close(let code): throw .closedByRelay(code: code)
                case .end: return nil
                case .wait:
                    // Waits until the phone sends, or the connection closes (a listener's task is cancelled).
                    await withTaskCancellationHandler {
                        await withCheckedContinuation { continuation in
                            let ready = state.withLock { state -> Bool in
                                if !state.queue.isEmpty || state.close != nil || state.closed { return true }
                                state.waiter = continuation
                                return false
                            }
                            if ready { continuation.resume() }
                        }
                    } onCancel: {
                        let waiter = state.withLock { state in
                            state.closed = true
                            defer { state.waiter = nil }
                            return state.waiter
                        }
                        waiter?.resume()
                    }
                    if Task.isCancelled { throw .cancelled("the listener stopped") }
                }
            }
        }

        func close() async {
            let waiter = state.withLock { state in
                state.closed = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
