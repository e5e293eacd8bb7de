import CTAPHIDIO
import Foundation
import Glibc
import Testing
import UHID

/// The kernel's side of /dev/uhid in tests: one end of an `AF_UNIX` `SOCK_SEQPACKET` pair, whose other end the
/// server gets as its device file. Each packet is one event, as each read and write of /dev/uhid is.
final class FakeKernel: Sendable {
    let descriptor: Int32

    /// The kernel end, and the device file for the server.
    static func make() throws -> (FakeKernel, UHIDFileDescriptor) {
        // A device that writes after the test dropped its kernel end must fail with EPIPE, not end the process.
        signal(SIGPIPE, SIG_IGN)
        var ends: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0)
        return (FakeKernel(descriptor: ends[0]), try UHIDFileDescriptor(adopting: ends[1]))
    }

    private init(descriptor: Int32) { self.descriptor = descriptor }

    deinit { Glibc.close(descriptor) }

    /// Ends the connection: the device's next read sees end of file.
    func hangUp() { shutdown(descriptor, Int32(SHUT_WR)) }

    /// Sends raw event bytes to the device.
    func send(bytes: [UInt8]) throws {
        let written = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        try #require(written == bytes.count)
    }

    func send(_ event: UHIDEvent) throws { try send(bytes: try event.bytes()) }

    /// What a hidraw write of `report` becomes: `UHID_OUTPUT` with the report number 0 first (65 bytes), or the
    /// bare report.
    func write(report: [UInt8], withReportNumber: Bool = true) throws {
        try send(.output(data: withReportNumber ? [0] + report : report, type: .output))
    }

    /// The next event's raw bytes, or `nil` if none arrives in time (or the device closed its end: `[]`).
    ///
    /// A thread of its own waits in `poll(2)`, so the wait ends as soon as the device writes, without polling.
    func nextBytes(timeout: Duration = .seconds(5)) async throws -> [UInt8]? {
        let descriptor = self.descriptor
        let milliseconds = Int32(min(timeout / .milliseconds(1), 600_000))
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<(count: Int, bytes: [UInt8])?, Never>) in
            let thread = Thread {
                var pending = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                var ready = poll(&pending, 1, milliseconds)
                while ready < 0 && errno == EINTR { ready = poll(&pending, 1, milliseconds) }
                guard ready > 0 else { return continuation.resume(returning: nil) }
                var buffer = [UInt8](repeating: 0, count: 8192)
                let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
                continuation.resume(returning: (count, Array(buffer.prefix(max(0, count)))))
            }
            thread.start()
        }
        guard let result else { return nil }
        try #require(result.count >= 0)
        return result.bytes
    }

    /// The next event, checking it is a whole `struct uhid_event`.
    func next(timeout: Duration = .seconds(5)) async throws -> UHIDEvent? {
        guard let bytes = try await nextBytes(timeout: timeout) else { return nil }
        try #require(bytes.count == 4380, "events are written whole")
        return try UHIDEvent(bytes: bytes)
    }

    /// The next input report (`UHID_INPUT2`), which must be 64 bytes.
    func nextReport(timeout: Duration = .seconds(5)) async throws -> [UInt8]? {
        guard let event = try await next(timeout: timeout) else { return nil }
        guard case .input2(let report) = event else {
            Issue.record("expected UHID_INPUT2, got \(event)")
            return nil
        }
        try #require(report.count == 64)
        return report
    }

    /// Sends every report of a message, each as a hidraw write.
    func send(_ cid: UInt32, _ command: UInt8, _ payload: [UInt8], withReportNumber: Bool = true) throws {
        for report in hostReports(cid, command, payload) {
            try write(report: report, withReportNumber: withReportNumber)
        }
    }

    /// Reads one message for `cid`; keepalives are collected, not returned.
    func receive(_ cid: UInt32, keepalives: inout [UInt8], timeout: Duration = .seconds(5)) async throws
        -> HostMessage
    {
        while true {
            let first = try #require(try await nextReport(timeout: timeout), "no reply")
            try #require(Array(first.prefix(4)) == bigEndian(cid), "reply for another channel")
            try #require(first[4] & 0x80 != 0, "expected an initialization packet")
            let command = first[4] & 0x7F
            let length = Int(first[5]) << 8 | Int(first[6])
            var payload = Array(first[7..<(7 + min(57, length))])
            if command == 0x3B {
                keepalives += payload
                continue
            }
            var sequence: UInt8 = 0
            while payload.count < length {
                let next = try #require(try await nextReport(timeout: timeout), "message incomplete")
                try #require(Array(next.prefix(4)) == bigEndian(cid) && next[4] == sequence)
                payload += next[5..<(5 + min(59, length - payload.count))]
                sequence += 1
            }
            return HostMessage(command: command, payload: payload)
        }
    }

    func receive(_ cid: UInt32, timeout: Duration = .seconds(5)) async throws -> HostMessage {
        var keepalives: [UInt8] = []
        return try await receive(cid, keepalives: &keepalives, timeout: timeout)
    }

    /// Allocates a channel with a broadcast INIT and checks the response as python-fido2 and libfido2 do.
    func initialize(withReportNumber: Bool = true) async throws -> UInt32 {
        let nonce: [UInt8] = [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
        try send(0xFFFF_FFFF, 0x06, nonce, withReportNumber: withReportNumber)
        let reply = try await receive(0xFFFF_FFFF)
        try #require(reply.command == 0x06 && reply.payload.count == 17)
        #expect(Array(reply.payload.prefix(8)) == nonce)
        #expect(reply.payload[12] == 2)  // CTAPHID protocol version
        #expect(reply.payload[16] == 0x0D)  // WINK | CBOR | NMSG
        return reply.payload[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }
}
