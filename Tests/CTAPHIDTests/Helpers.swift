import CTAPHID
import Testing

/// A channel-identifier source that repeats a script of values.
struct ScriptedChannelIDs: RandomNumberGenerator, Sendable {
    var values: [UInt64]
    var index = 0

    init(_ values: [UInt64]) { self.values = values }

    mutating func next() -> UInt64 {
        defer { index += 1 }
        return values[index % values.count]
    }
}

typealias Machine = CTAPHIDStateMachine<String>

/// Builds an initialization report by hand, independently of the module's serializer.
func initReport(_ cid: UInt32, _ command: UInt8, length: Int, data: [UInt8] = []) -> [UInt8] {
    var report = bigEndian(cid) + [0x80 | command, UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
    report += data.prefix(57)
    return report + Array(repeating: 0, count: 64 - report.count)
}

/// Builds an initialization report whose declared length is the data's length.
func initReport(_ cid: UInt32, _ command: UInt8, _ data: [UInt8] = []) -> [UInt8] {
    initReport(cid, command, length: data.count, data: data)
}

/// Builds a continuation report by hand.
func contReport(_ cid: UInt32, seq: UInt8, data: [UInt8] = []) -> [UInt8] {
    var report = bigEndian(cid) + [seq]
    report += data.prefix(59)
    return report + Array(repeating: 0, count: 64 - report.count)
}

/// Every report a host would send for this message.
func hostReports(_ cid: UInt32, _ command: UInt8, _ payload: [UInt8]) -> [[UInt8]] {
    var reports = [initReport(cid, command, length: payload.count, data: payload)]
    var offset = 57
    var seq: UInt8 = 0
    while offset < payload.count {
        reports.append(contReport(cid, seq: seq, data: Array(payload[offset..<min(offset + 59, payload.count)])))
        offset += 59
        seq += 1
    }
    return reports
}

func bigEndian(_ value: UInt32) -> [UInt8] {
    [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
}

/// A message as a host reassembles it from the authenticator's reports.
struct Reply: Equatable, CustomStringConvertible {
    var peer: String
    var cid: UInt32
    var command: UInt8
    var payload: [UInt8]

    var description: String { "Reply(\(peer), cid \(cid), cmd \(command), \(payload.count) bytes)" }
}

/// Reassembles the `.send` actions into messages, checking the framing as a strict host would.
func replies(_ actions: [Machine.Action], sourceLocation: SourceLocation = #_sourceLocation) -> [Reply] {
    var result: [Reply] = []
    var expected = 0
    var nextSeq: UInt8 = 0
    for action in actions {
        guard case .send(let report, let peer) = action else { continue }
        #expect(report.count == 64, "report size", sourceLocation: sourceLocation)
        let cid = report[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        if report[4] & 0x80 != 0 {
            #expect(result.last.map { $0.payload.count == expected } ?? true, "previous message incomplete")
            expected = Int(report[5]) << 8 | Int(report[6])
            nextSeq = 0
            result.append(
                Reply(
                    peer: peer, cid: cid, command: report[4] & 0x7F, payload: Array(report[7..<(7 + min(57, expected))])
                ))
            #expect(
                report[(7 + min(57, expected))...].allSatisfy { $0 == 0 }, "zero padding",
                sourceLocation: sourceLocation)
        } else {
            guard var last = result.popLast() else {
                Issue.record("continuation without initialization", sourceLocation: sourceLocation)
                continue
            }
            #expect(report[4] == nextSeq, "sequence", sourceLocation: sourceLocation)
            #expect(last.cid == cid && last.peer == peer, sourceLocation: sourceLocation)
            nextSeq += 1
            let take = min(59, expected - last.payload.count)
            last.payload += report[5..<(5 + take)]
            #expect(report[(5 + take)...].allSatisfy { $0 == 0 }, "zero padding", sourceLocation: sourceLocation)
            result.append(last)
        }
    }
    #expect(result.last.map { $0.payload.count == expected } ?? true, "last message incomplete")
    return result
}

/// The only reply among the actions.
func onlyReply(_ actions: [Machine.Action], sourceLocation: SourceLocation = #_sourceLocation) -> Reply? {
    let all = replies(actions, sourceLocation: sourceLocation)
    #expect(all.count == 1, "expected exactly one reply, got \(all)", sourceLocation: sourceLocation)
    return all.first
}

let ping: UInt8 = 0x01, msg: UInt8 = 0x03, lock: UInt8 = 0x04, hidInit: UInt8 = 0x06, wink: UInt8 = 0x08
let cbor: UInt8 = 0x10, cancel: UInt8 = 0x11, keepalive: UInt8 = 0x3B, hidError: UInt8 = 0x3F
let broadcast: UInt32 = 0xFFFF_FFFF

/// A fixed origin for the tests' clock; only differences from it matter.
let t0 = ContinuousClock.now

func at(_ milliseconds: Int) -> ContinuousClock.Instant { t0.advanced(by: .milliseconds(milliseconds)) }

/// Sends every report of a host message, returning all actions.
func feed(
    _ machine: inout Machine,
    _ reports: [[UInt8]],
    from peer: String = "alice",
    now: ContinuousClock.Instant = t0
) throws -> [Machine.Action] {
    var actions: [Machine.Action] = []
    for report in reports { actions += try machine.receive(report: report, from: peer, now: now) }
    return actions
}

/// Allocates a channel with a broadcast INIT and returns its identifier.
func allocate(_ machine: inout Machine, from peer: String = "alice", now: ContinuousClock.Instant = t0) throws -> UInt32
{
    let nonce: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
    let reply = try #require(
        onlyReply(try machine.receive(report: initReport(broadcast, hidInit, nonce), from: peer, now: now)))
    try #require(reply.command == hidInit && reply.payload.count == 17 && Array(reply.payload.prefix(8)) == nonce)
    return reply.payload[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
}

/// The transaction of the single `.dispatchCBOR` among the actions.
func dispatched(_ actions: [Machine.Action]) -> (CBORTransactionID, [UInt8])? {
    let all = actions.compactMap { action -> (CBORTransactionID, [UInt8])? in
        if case .dispatchCBOR(let id, let request) = action { return (id, request) }
        return nil
    }
    return all.count == 1 ? all[0] : nil
}

func errorReply(_ cid: UInt32, _ code: UInt8, to peer: String = "alice") -> Reply {
    Reply(peer: peer, cid: cid, command: hidError, payload: [code])
}
