import NIOCore
import NIOWebSocket

/// The reading end of a tunnel's inbound stream. The stream's iterator must not be shared across tasks: the actor
/// keeps it in its own isolation and lets one receive use it at a time.
actor InboundReader {
    private var iterator: NIOAsyncChannelInboundStream<TunnelInbound>.AsyncIterator
    private(set) var isReceiving = false
    /// How the stream ended, once it has: `.some(nil)` for a clean close.
    private var end: TunnelError?? = nil
    /// The number of the latest receive: a wake-up names the receive it is for.
    private var receives: UInt64 = 0

    init(_ inbound: NIOAsyncChannelInboundStream<TunnelInbound>) {
        iterator = inbound.makeAsyncIterator()
    }

    func receive(timeout: Duration?, waitingFor what: String, channel: any Channel, budget: UnreadBudget)
        async throws(TunnelError) -> [UInt8]?
    {
        if let end {
            if let error = end { throw error }
            return nil
        }
        guard !isReceiving else { throw .concurrentReceive }
        isReceiving = true
        defer { isReceiving = false }
        receives += 1
        let number = receives
        // The deadline does not cancel `next()`, which would end the stream: it wakes it with a marker in the
        // stream, from a timer on the channel's event loop (cancelled when this function returns, without waiting
        // for anything: a sleeping child task would have to wake and finish first, on every receive). Without a
        // timeout nothing wakes it but a message, the tunnel's end or the caller's cancellation.
        let wake = timeout.map { timeout in
            channel.eventLoop.scheduleTask(in: TimeAmount(timeout)) {
                channel.pipeline.fireUserInboundEventTriggered(TunnelWake(receive: number))
            }
        }
        defer { wake?.cancel() }
        switch await next(waking: number, budget: budget) {
        case .message(let message):
            return message
        case .woken:
            throw .timedOut(what)
        case .ended(nil):
            end = .some(nil)
            return nil
        case .ended(let error?):
            end = error
            throw error
        case .cancelled:
            end = .cancelled(what)
            channel.triggerUserOutboundEvent(TunnelCloseRequest(code: .goingAway), promise: nil)
            throw .cancelled(what)
        }
    }

    /// What one read of the inbound stream gave.
    private enum ReadOutcome {
        case message([UInt8])
        /// The receive's deadline passed.
        case woken
        /// The stream ended: cleanly (`nil`) or with the tunnel's error.
        case ended(TunnelError?)
        /// The calling task was cancelled, which ended the stream.
        case cancelled
    }

    /// Reads the stream up to the next message or this receive's wake-up, skipping wake-ups of earlier receives.
    private func next(waking number: UInt64, budget: UnreadBudget) async -> ReadOutcome {
        // A stored property cannot be mutated across a suspension: the loop uses a copy of the iterator (which
        // shares its state), kept for the next receive afterwards.
        var iterator = self.iterator
        defer { self.iterator = iterator }
        do {
            while let element = try await iterator.next(isolation: self) {
                switch element {
                case .message(let message):
                    budget.release(message.count)
                    return .message(message)
                case .wake(number):
                    return .woken
                case .wake:
                    continue
                }
            }
            return .ended(nil)
        } catch let error as TunnelError {
            return .ended(error)
        } catch is CancellationError {
            return .cancelled
        } catch {
            return .ended(.connectionFailed(TunnelError.ConnectionFault(error)))
        }
    }
}
