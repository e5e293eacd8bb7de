import CTAPHIDIO
import Dispatch
import Glibc
import Synchronization
import Testing
import UHID

/// A uhid device file in memory, with the test as the kernel: events queued for the device's reader thread, and the
/// events the device writes, taken in order. No sockets and no polling: the test waits for the reader to have handled
/// everything queued (``drained()``), then reads what came out.
final class MemoryDeviceFile: UHIDDeviceFile {
    private enum Incoming {
        case event([UInt8])
        case failure(UHIDError)
    }

    private struct State {
        var incoming: [Incoming] = []
        var written: [[UInt8]] = []
        var interrupted = false
        var hungUp = false
        var readerEnded = false
        var closeCount = 0
        /// Writes still to refuse, and with what.
        var refusedWrites: [UHIDError] = []
        /// Whether the reader is waiting with nothing queued.
        var readerIsIdle = false
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        var writeWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())
    private let wakeReader = DispatchSemaphore(value: 0)

    // MARK: The device's side

    func write(_ event: [UInt8]) throws(UHIDError) {
        let (refusal, waiters) = state.withLock { state -> (UHIDError?, [CheckedContinuation<Void, Never>]) in
            if !state.refusedWrites.isEmpty { return (state.refusedWrites.removeFirst(), []) }
            state.written.append(event)
            defer { state.writeWaiters = [] }
            return (nil, state.writeWaiters)
        }
        for waiter in waiters { waiter.resume() }
        if let refusal { throw refusal }
    }

    func read() throws(UHIDError) -> [UInt8]? {
        while true {
            let (next, waiters) = state.withLock { state -> (Incoming?, [CheckedContinuation<Void, Never>]) in
                if !state.interrupted, !state.incoming.isEmpty { return (state.incoming.removeFirst(), []) }
                if state.interrupted || state.hungUp {
                    state.readerEnded = true
                } else {
                    state.readerIsIdle = true
                }
                defer { state.idleWaiters = [] }
                return (nil, state.idleWaiters)
            }
            for waiter in waiters { waiter.resume() }
            switch next {
            case .event(let bytes): return bytes
            case .failure(let error): throw error
            case nil:
                if state.withLock({ $0.readerEnded }) { return nil }
                wakeReader.wait()
            }
        }
    }

    func interrupt() {
        state.withLock { $0.interrupted = true }
        wakeReader.signal()
    }

    func close() {
        state.withLock { $0.closeCount += 1 }
    }

    // MARK: The kernel's side

    /// Queues raw event bytes for the device.
    func send(bytes: [UInt8]) {
        queue(.event(bytes))
    }

    func send(_ event: UHIDEvent) throws {
        send(bytes: try event.bytes())
    }

    /// What a hidraw write of `report` becomes: `UHID_OUTPUT` with report number 0 first, or the bare report.
    func write(report: [UInt8], withReportNumber: Bool = true) throws {
        try send(.output(data: withReportNumber ? [0] + report : report, type: .output))
    }

    /// Sends every report of a message, each as a hidraw write.
    func send(_ cid: UInt32, _ command: UInt8, _ payload: [UInt8]) throws {
        for report in hostReports(cid, command, payload) { try write(report: report) }
    }

    /// Makes the device's next read fail, after the events queued before it.
    func failNextRead(with error: UHIDError) {
        queue(.failure(error))
    }

    /// Ends the file: the device reads end of file once it has read everything queued.
    func hangUp() {
        state.withLock { $0.hungUp = true }
        wakeReader.signal()
    }

    /// Refuses the device's next writes, one error each.
    func refuseWrites(_ errors: [UHIDError]) {
        state.withLock { $0.refusedWrites += errors }
    }

    var closeCount: Int { state.withLock { $0.closeCount } }

    /// Waits until the reader thread has handled every queued event (and is waiting for more, or has ended).
    func drained() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                if state.readerEnded || (state.readerIsIdle && state.incoming.isEmpty) { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Takes every event the device has written so far.
    func takeWritten() throws -> [UHIDEvent] {
        try state.withLock { state in
            defer { state.written = [] }
            return state.written
        }.map { bytes in
            try #require(bytes.count == UHIDLayout.eventSize, "events are written whole")
            return try UHIDEvent(bytes: bytes)
        }
    }

    /// Waits for the device to write an event, and takes the first one not taken yet.
    func nextWritten() async throws -> UHIDEvent {
        while true {
            if let bytes = state.withLock({ $0.written.isEmpty ? nil : $0.written.removeFirst() }) {
                try #require(bytes.count == UHIDLayout.eventSize, "events are written whole")
                return try UHIDEvent(bytes: bytes)
            }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state in
                    if !state.written.isEmpty { return true }
                    state.writeWaiters.append(continuation)
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }

    private func queue(_ incoming: Incoming) {
        state.withLock { state in
            state.incoming.append(incoming)
            state.readerIsIdle = false
        }
        wakeReader.signal()
    }
}
