import CTAP2
import CTAPHID
import Glibc
import Logging
import NIOCore
import NIOEmbedded
import TestSupport
import Testing
import UHID

@testable import CTAPHIDIO

/// The uhid device does not use NIO channel handlers: a reader thread reads events from its device file and hands
/// reports to the driver on an event loop. Here that loop is a `NIOAsyncTestingEventLoop` whose time the test moves,
/// the device file is ``MemoryDeviceFile``, and the driver's clock follows the loop: timeouts and keepalives without
/// waiting, and no sockets.
struct MemoryUHIDDevice {
    let loop = NIOAsyncTestingEventLoop()
    let file = MemoryDeviceFile()
    let server: CTAPHIDUHIDServer

    init(handler: @escaping CBORHandler = { _, _ in [0x01] }) async throws {
        var configuration = CTAPHIDUHIDServer.Configuration()
        configuration.phys = "test/memory"
        server = try await CTAPHIDUHIDServer.start(
            file: file, configuration: configuration, group: loop, logger: quietLogger, wink: nil,
            now: clock(following: loop), handler: handler)
        #expect(try file.takeWritten() == [.create2(try FIDOHIDDevice.create(phys: "test/memory"))])
        try file.send(.start(flags: 0))
        try file.send(.open)
    }

    /// Waits until the device has handled every event sent so far, then takes what it wrote.
    func written() async throws -> [UHIDEvent] {
        await file.drained()
        await loop.run()
        return try file.takeWritten()
    }

    /// The input reports written since the last call, reassembled into messages; any other event is an issue.
    func replies(sourceLocation: SourceLocation = #_sourceLocation) async throws -> [Reply<UHIDHost>] {
        let events = try await written()
        var reports: [(peer: UHIDHost, report: [UInt8])] = []
        for event in events {
            guard case .input2(let report) = event else {
                Issue.record("expected UHID_INPUT2, got \(event)", sourceLocation: sourceLocation)
                continue
            }
            reports.append((UHIDHost(), report))
        }
        return reassemble(reports, sourceLocation: sourceLocation)
    }

    /// Waits for the next message, which an authenticator task may still be writing.
    func nextReply() async throws -> Reply<UHIDHost> {
        guard case .input2(let first) = try await file.nextWritten() else {
            throw UnexpectedEvent()
        }
        var reports = [(peer: UHIDHost(), report: first)]
        let length = Int(first[5]) << 8 | Int(first[6])
        while 57 + 59 * (reports.count - 1) < length {
            guard case .input2(let next) = try await file.nextWritten() else { throw UnexpectedEvent() }
            reports.append((UHIDHost(), next))
        }
        return try #require(reassemble(reports).first)
    }

    struct UnexpectedEvent: Error {}

    func initialize() async throws -> UInt32 {
        let nonce: [UInt8] = [0x10, 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0x80]
        try file.send(0xFFFF_FFFF, 0x06, nonce)
        let replies = try await replies()
        try #require(replies.count == 1)
        try #require(replies[0].command == 0x06 && Array(replies[0].payload.prefix(8)) == nonce)
        return replies[0].payload[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }

    /// Closes the device, checks it said `UHID_DESTROY` last and closed its file, and stops the loop.
    func close() async throws {
        await server.close()
        let events = try file.takeWritten()
        #expect(events.last == .destroy)
        #expect(events.dropLast().allSatisfy { if case .input2 = $0 { true } else { false } })
        #expect(file.closeCount == 1)
        await loop.shutdownGracefully()
    }
}

@Suite(.timeLimit(.minutes(1)))
struct CTAPHIDUHIDEventLoopTests {
    let host = UHIDHost()

    @Test func aPingInSeveralOutputEventsIsEchoedOnceComplete() async throws {
        let device = try await MemoryUHIDDevice()
        let cid = try await device.initialize()
        let payload = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 11) }
        let reports = hostReports(cid, 0x01, payload)
        for (index, report) in reports.enumerated() {
            try device.file.write(report: report, withReportNumber: index % 2 == 0)
            if index < reports.count - 1 { #expect(try await device.written().isEmpty) }
        }
        #expect(try await device.written() == reports.map { .input2($0) })
        try await device.close()
    }

    @Test func outputThatIsNotOneReportIsDropped() async throws {
        let device = try await MemoryUHIDDevice()
        let initReport = hostReports(0xFFFF_FFFF, 0x06, [1, 2, 3, 4, 5, 6, 7, 8])[0]
        for data in [
            [], [0], Array(initReport.prefix(63)), [1] + initReport, [0] + initReport + [0], initReport + initReport,
        ] {
            try device.file.send(.output(data: data, type: .output))
        }
        try device.file.send(.output(data: [0] + initReport, type: .feature))
        try device.file.send(.setReport(id: 9, reportNumber: 0, type: .output, data: Array(initReport.prefix(40))))
        // The refused SET_REPORT is answered with EINVAL; nothing else comes out.
        #expect(try await device.written() == [.setReportReply(id: 9, error: UInt16(EINVAL))])
        let cid = try await device.initialize()
        try device.file.send(cid, 0x01, [7])
        #expect(try await device.replies() == [Reply(peer: host, channel: cid, command: 0x01, payload: [7])])
        try await device.close()
    }

    @Test func programsOnOtherChannelsAreBusyWhileAMessageIsReassembled() async throws {
        let device = try await MemoryUHIDDevice()
        let first = try await device.initialize()
        let second = try await device.initialize()
        #expect(first != second)
        let payload = Array(repeating: UInt8(0x33), count: 120)
        let reports = hostReports(first, 0x01, payload)
        try device.file.write(report: reports[0])
        try device.file.send(second, 0x01, [0x42])
        try device.file.send(second, 0x06, [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(
            try await device.replies() == [
                errorReply(0x06, channel: second, to: host), errorReply(0x06, channel: second, to: host),
            ])
        for report in reports.dropFirst() { try device.file.write(report: report) }
        #expect(try await device.replies() == [Reply(peer: host, channel: first, command: 0x01, payload: payload)])
        try device.file.send(second, 0x01, [0x42])
        #expect(try await device.replies() == [Reply(peer: host, channel: second, command: 0x01, payload: [0x42])])
        try await device.close()
    }

    @Test func messageTimeoutsFollowTheLoopsClock() async throws {
        let device = try await MemoryUHIDDevice()
        let cid = try await device.initialize()
        let reports = hostReports(cid, 0x01, Array(repeating: 5, count: 7609))
        try device.file.write(report: reports[0])
        #expect(try await device.written().isEmpty)
        await device.loop.advanceTime(by: .milliseconds(450))
        #expect(try await device.written().isEmpty)
        await device.loop.advanceTime(by: .milliseconds(50))
        #expect(try await device.replies() == [errorReply(0x05, channel: cid, to: host)])

        // However short the gaps, the whole message must arrive within 3 s.
        try device.file.write(report: reports[0])
        #expect(try await device.written().isEmpty)
        for report in reports[1...7] {
            await device.loop.advanceTime(by: .milliseconds(400))
            try device.file.write(report: report)
            #expect(try await device.written().isEmpty)
        }
        await device.loop.advanceTime(by: .milliseconds(150))
        #expect(try await device.written().isEmpty)
        await device.loop.advanceTime(by: .milliseconds(50))
        #expect(try await device.replies() == [errorReply(0x05, channel: cid, to: host)])
        try await device.close()
    }

    @Test func keepalivesEvery100MillisecondsUntilCancelled() async throws {
        let cancelled = Gate()
        let device = try await MemoryUHIDDevice { _, setStatus in
            setStatus(.userPresenceNeeded)
            if !(await Gate().wait()) { cancelled.open() }
            return [CTAPError.keepaliveCancel.rawValue]
        }
        let cid = try await device.initialize()
        try device.file.send(cid, 0x10, [0x01, 0xA0])
        let keepalive = Reply(peer: host, channel: cid, command: 0x3B, payload: [0x02])
        #expect(try await device.nextReply() == keepalive)
        await device.loop.advanceTime(by: .milliseconds(99))
        #expect(try await device.written().isEmpty)
        await device.loop.advanceTime(by: .milliseconds(101))
        #expect(try await device.replies() == [keepalive, keepalive])
        try device.file.send(cid, 0x11, [])
        await cancelled.wait()
        #expect(try await device.nextReply() == Reply(peer: host, channel: cid, command: 0x10, payload: [0x2D]))
        await device.loop.advanceTime(by: .milliseconds(500))
        #expect(try await device.written().isEmpty)
        try await device.close()
    }

    @Test func hostileEventsAreRefusedOrIgnoredInOrder() async throws {
        let device = try await MemoryUHIDDevice()
        try device.file.send(.getReport(id: 0x0102_0304, reportNumber: 0, type: .feature))
        try device.file.send(.setReport(id: 77, reportNumber: 3, type: .feature, data: [1, 2]))
        device.file.send(bytes: [99, 0, 0, 0] + Array(repeating: 0xEE, count: UHIDLayout.eventSize - 4))  // unknown
        device.file.send(bytes: [6, 0, 0, 0, 0xFF])  // a truncated OUTPUT
        // Events only a device sends, arriving from the kernel's side.
        try device.file.send(.input2(Array(repeating: 0, count: 64)))
        try device.file.send(.destroy)
        try device.file.send(.getReportReply(id: 1, error: 0, data: [1]))
        var random = SeededRandom(seed: 0xBAD)
        for _ in 0..<500 {
            let size = Int.random(in: 0...UHIDLayout.eventSize, using: &random)
            var bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &random) }
            // Keep the event types that are answered (OUTPUT, GET_REPORT, SET_REPORT) out of the noise.
            if size >= 4, [6, 9, 13].contains(bytes[0]) { bytes[0] = 0x70 }
            device.file.send(bytes: bytes)
        }
        #expect(
            try await device.written() == [
                .getReportReply(id: 0x0102_0304, error: UInt16(EIO), data: []),
                .setReportReply(id: 77, error: UInt16(EIO)),
            ])
        let cid = try await device.initialize()
        try device.file.send(cid, 0x01, [0xAB])
        #expect(try await device.replies() == [Reply(peer: host, channel: cid, command: 0x01, payload: [0xAB])])
        try await device.close()
    }

    @Test func aRefusedInputReportLosesThatReportOnly() async throws {
        let device = try await MemoryUHIDDevice()
        let cid = try await device.initialize()
        device.file.refuseWrites([.writeFailed(event: "UHID_INPUT2", errno: EAGAIN)])
        try device.file.send(cid, 0x01, [1])
        #expect(try await device.written().isEmpty)
        try device.file.send(cid, 0x01, [2])
        #expect(try await device.replies() == [Reply(peer: host, channel: cid, command: 0x01, payload: [2])])
        try await device.close()
    }

    @Test func aFailedReadEndsRunWithItsError() async throws {
        let device = try await MemoryUHIDDevice()
        device.file.failNextRead(with: .readFailed(errno: EIO))
        await #expect(throws: UHIDError.readFailed(errno: EIO)) { try await device.server.run() }
        try await device.close()
    }

    @Test func aRefusedCreateFailsStartAndClosesTheFile() async throws {
        let loop = NIOAsyncTestingEventLoop()
        let file = MemoryDeviceFile()
        file.refuseWrites([.writeFailed(event: "UHID_CREATE2", errno: EINVAL)])
        await #expect(throws: UHIDError.writeFailed(event: "UHID_CREATE2", errno: EINVAL)) {
            _ = try await CTAPHIDUHIDServer.start(
                file: file, configuration: CTAPHIDUHIDServer.Configuration(), group: loop,
                logger: quietLogger, wink: nil, now: clock(following: loop), handler: { _, _ in [0] })
        }
        #expect(file.closeCount == 1)
        #expect(try file.takeWritten().isEmpty)
        await loop.shutdownGracefully()
    }
}
