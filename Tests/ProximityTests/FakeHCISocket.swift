import Glibc
import Synchronization

@testable import Proximity
@testable import ProximityIO

/// A scripted controller behind the `HCISocket` seam: it records every packet written, answers each command
/// through `respond`, and hands out queued packets (answers and injected events) in order.
final class FakeHCISocket: HCISocket {
    private struct State {
        var written: [[UInt8]] = []
        var incoming: [[UInt8]] = []
        var closed = false
        var writeError: Int32?
        var interrupted = false
        var reads = 0
    }

    private let state = Mutex(State())
    private let respond: @Sendable ([UInt8]) -> [[UInt8]]

    /// `respond` gets each written packet and returns the packets the controller sends back.
    init(respond: @escaping @Sendable ([UInt8]) -> [[UInt8]] = FakeHCISocket.succeed) {
        self.respond = respond
    }

    /// Answers every command with Command Complete, status success.
    static let succeed: @Sendable ([UInt8]) -> [[UInt8]] = { [commandComplete(opcode(of: $0), status: 0x00)] }

    /// Every packet written so far.
    var written: [[UInt8]] { state.withLock { $0.written } }
    var isClosed: Bool { state.withLock { $0.closed } }
    /// How many times `read` has been called.
    var reads: Int { state.withLock { $0.reads } }

    /// Queues a packet as if the controller had sent it.
    func inject(_ packet: [UInt8]) { state.withLock { $0.incoming.append(packet) } }

    /// Makes every later write fail with `code`.
    func failWrites(_ code: Int32) { state.withLock { $0.writeError = code } }

    func write(_ packet: [UInt8]) throws(HCISocketError) {
        let error: HCISocketError? = state.withLock { state in
            if state.closed { return HCISocketError(call: "write", code: EBADF) }
            if let code = state.writeError { return HCISocketError(call: "write", code: code) }
            state.written.append(packet)
            return nil
        }
        if let error { throw error }
        let answers = respond(packet)
        state.withLock { $0.incoming += answers }
    }

    /// Looks for a packet every 0.2 ms until one is queued, `timeout` passes (`nil`: never) or `interrupt()` is called.
    func read(timeout: Duration?) throws(HCISocketError) -> [UInt8]? {
        enum Next { case packet([UInt8]), interrupted, nothingYet }
        let deadline = timeout.map { ContinuousClock.now + $0 }
        state.withLock { $0.reads += 1 }
        while true {
            let next: Result<Next, HCISocketError> = state.withLock { state in
                if state.closed { return .failure(HCISocketError(call: "read", code: EBADF)) }
                if state.interrupted {
                    state.interrupted = false
                    return .success(.interrupted)
                }
                return .success(state.incoming.isEmpty ? .nothingYet : .packet(state.incoming.removeFirst()))
            }
            switch try next.get() {
            case .packet(let packet): return packet
            case .interrupted: return nil
            case .nothingYet:
                if let deadline, ContinuousClock.now >= deadline { return nil }
                usleep(200)
            }
        }
    }

    func interrupt() { state.withLock { $0.interrupted = true } }

    func close() { state.withLock { $0.closed = true } }
}

/// The opcode of a command packet.
func opcode(of packet: [UInt8]) -> UInt16 { UInt16(packet[1]) | UInt16(packet[2]) << 8 }

/// Command Complete for `opcode` with `status` as its only return parameter.
func commandComplete(_ opcode: UInt16, status: UInt8) -> [UInt8] {
    [0x04, 0x0E, 0x04, 0x01, UInt8(opcode & 0xFF), UInt8(opcode >> 8), status]
}

/// Command Status for `opcode`.
func commandStatus(_ opcode: UInt16, status: UInt8) -> [UInt8] {
    [0x04, 0x0F, 0x04, status, 0x01, UInt8(opcode & 0xFF), UInt8(opcode >> 8)]
}

/// One report of an LE Advertising Report event, in the kernel's interleaved layout.
struct ReportFields {
    var eventType: UInt8 = 0x03
    var addressType: UInt8 = 0x00
    var address: [UInt8] = [0x11, 0x22, 0x33, 0x44, 0x55, 0x66]
    var data: [UInt8]
    var rssi: Int8 = -60
}

/// An LE Meta event with an LE Advertising Report subevent holding `reports`.
func advertisingReportEvent(_ reports: [ReportFields]) -> [UInt8] {
    var parameters: [UInt8] = [0x02, UInt8(reports.count)]
    for report in reports {
        parameters += [report.eventType, report.addressType] + report.address + [UInt8(report.data.count)]
        parameters += report.data + [UInt8(bitPattern: report.rssi)]
    }
    return [0x04, 0x3E, UInt8(parameters.count)] + parameters
}

/// `"01 06 20"` → `[0x01, 0x06, 0x20]`.
func bytes(_ hex: String) -> [UInt8] {
    hex.split(separator: " ").map { UInt8($0, radix: 16)! }
}

/// A caBLE advert as advertising data: one Service Data AD for UUID 0xFFF9 carrying a 20-byte EID.
func cableAdvert(_ eid: [UInt8]) -> [UInt8] { [0x17, 0x16, 0xF9, 0xFF] + eid }

/// Values collected from another thread.
final class Collected<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    func append(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }

    /// Waits up to thirty seconds for at least `count` values.
    func wait(for count: Int) async throws -> [Value] {
        // Generous: it returns as soon as `count` values are in, and a loaded machine may hold the test up for seconds.
        let deadline = ContinuousClock.now + .seconds(30)
        while all.count < count, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
        return all
    }
}
