import Glibc
import Synchronization
import TestSupport
import Testing

@testable import Proximity
@testable import ProximityIO

/// The real socket loop (`LinuxHCISocket`: poll(2) on the socket and its eventfd, read, write, close) over a Unix
/// packet socket pair standing in for the kernel's HCI socket; the test plays the controller on the other end.
struct LinuxHCISocketTests {
    /// The backend's end as a `LinuxHCISocket`, and the controller's end.
    static func pair() throws -> (LinuxHCISocket, Int32) {
        var fds: [Int32] = [-1, -1]
        let made = socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds)
        try #require(made == 0, "socketpair: errno \(errno)")
        return (try LinuxHCISocket(socket: fds[0]), fds[1])
    }

    /// Sends one packet from the controller's end; whether it went whole.
    @discardableResult
    static func send(_ packet: [UInt8], to peer: Int32) -> Bool {
        while true {
            let sent = packet.withUnsafeBytes { Glibc.send(peer, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0, errno == EINTR { continue }
            return sent == packet.count
        }
    }

    /// The next packet at the controller's end, or `nil` when none comes within `milliseconds` or the other end
    /// closed. A signal meant for someone else (the full test run starts child processes, whose SIGCHLD can land on
    /// this thread) is not an answer: the wait goes on.
    static func receive(from peer: Int32, milliseconds: Int32 = 1000) -> [UInt8]? {
        let deadline = ContinuousClock.now + .milliseconds(milliseconds)
        var poller = pollfd(fd: peer, events: Int16(POLLIN), revents: 0)
        while true {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return nil }
            let ready = poll(&poller, 1, Int32(left / .milliseconds(1)) + 1)
            if ready < 0, errno == EINTR { continue }
            guard ready == 1 else { return nil }
            var buffer = [UInt8](repeating: 0, count: 1024)
            let count = buffer.withUnsafeMutableBytes { recv(peer, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            return count > 0 ? Array(buffer[..<count]) : nil
        }
    }

    /// A controller at `peer` that answers every command with success until the backend's end closes (or five minutes
    /// pass without a packet); the result is every packet it received.
    static func answering(at peer: Int32) -> Collected<[[UInt8]]> {
        inBackground {
            var commands: [[UInt8]] = []
            while let packet = receive(from: peer, milliseconds: 300_000) {
                commands.append(packet)
                send(commandComplete(opcode(of: packet), status: 0), to: peer)
            }
            return commands
        }
    }

    /// Runs `body` on a thread of its own and collects its result. Not Dispatch's global queue: on Linux its few
    /// threads are shared with the backend's own blocking work, which a body that blocks for long would starve.
    static func inBackground<T: Sendable>(_ body: @escaping @Sendable () -> T) -> Collected<T> {
        let result = Collected<T>()
        let work: @Sendable () -> Void = { result.append(body()) }
        let argument = Unmanaged.passRetained(Box(work)).toOpaque()
        var thread = pthread_t()
        let started = pthread_create(
            &thread, nil,
            { argument in
                Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue().work()
                return nil
            }, argument)
        if started == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<Box>.fromOpaque(argument).release()
            Issue.record("pthread_create: \(started)")
        }
        return result
    }

    /// A closure on its way to a new thread.
    private final class Box: Sendable {
        let work: @Sendable () -> Void
        init(_ work: @escaping @Sendable () -> Void) { self.work = work }
    }

    @Test func writesAndReadsWholePackets() throws {
        let (socket, peer) = try Self.pair()
        defer {
            socket.close()
            Glibc.close(peer)
        }
        let command = HCICommand.setAdvertisingEnable(true).packet
        try socket.write(command)
        #expect(Self.receive(from: peer) == command)
        let events = [commandComplete(0x200A, status: 0), advertisingReportEvent([ReportFields(data: [1, 2, 3])])]
        for event in events { #expect(Self.send(event, to: peer)) }
        #expect(try socket.read(timeout: .seconds(2)) == events[0])
        #expect(try socket.read(timeout: nil) == events[1])
    }

    @Test func readTimesOut() throws {
        let (socket, peer) = try Self.pair()
        defer {
            socket.close()
            Glibc.close(peer)
        }
        let start = ContinuousClock.now
        #expect(try socket.read(timeout: .milliseconds(50)) == nil)
        #expect(ContinuousClock.now - start >= .milliseconds(50))
        #expect(try socket.read(timeout: .zero) == nil)
    }

    /// A read without a timeout sleeps until a packet or `interrupt()` comes; an interrupt with no read waiting makes
    /// the next read return at once, and only that one.
    @Test func interruptWakesAWaitingRead() async throws {
        let (socket, peer) = try Self.pair()
        defer {
            socket.close()
            Glibc.close(peer)
        }
        let waiting = Self.inBackground { Result { () throws(HCISocketError) in try socket.read(timeout: nil) } }
        try await Task.sleep(for: .milliseconds(300))
        #expect(waiting.all.isEmpty, "the read returned without a packet or an interrupt")
        socket.interrupt()
        let woken = try #require(try await waiting.wait(for: 1).first)
        #expect(try woken.get() == nil)

        socket.interrupt()
        let start = ContinuousClock.now
        #expect(try socket.read(timeout: .seconds(60)) == nil)
        #expect(ContinuousClock.now - start < .seconds(30), "woken by the interrupt, not by the time limit")
        #expect(try socket.read(timeout: .milliseconds(50)) == nil)
        #expect(ContinuousClock.now - start >= .milliseconds(50), "the interrupt was used up by the first read")

        let event = commandComplete(0x200C, status: 0)
        let reading = Self.inBackground { Result { () throws(HCISocketError) in try socket.read(timeout: nil) } }
        #expect(Self.send(event, to: peer))
        #expect(try await reading.wait(for: 1).first?.get() == event)
    }

    /// The controller's end going away fails the read instead of spinning; a closed socket refuses every call.
    @Test func hangUpAndClose() throws {
        let (socket, peer) = try Self.pair()
        Glibc.close(peer)
        #expect(throws: HCISocketError(call: "read", code: EPIPE)) { try socket.read(timeout: .seconds(2)) }
        socket.close()
        #expect(throws: HCISocketError(call: "write", code: EBADF)) { try socket.write([0x01]) }
        #expect(throws: HCISocketError(call: "read", code: EBADF)) { try socket.read(timeout: nil) }
        socket.interrupt()  // nothing to wake, nothing to write to
        socket.close()  // twice: nothing more
    }

    /// The scanner and advertiser through the real loop, with a controller that answers every command: the same
    /// bytes as against the fake socket, reports delivered, and a prompt stop with no callback after it.
    @Test func scannerAndAdvertiserOverTheRealLoop() async throws {
        let (socket, peer) = try Self.pair()
        let commands = Self.answering(at: peer)
        let scanner = try BlueZScanner(adapter: 0, options: BlueZRadioTests.fast()) { _ throws(HCISocketError) in
            socket
        }
        let seen = Collected<[UInt8]>()
        try await scanner.startScanning { seen.append($0) }
        #expect(Self.send(advertisingReportEvent([ReportFields(data: [7]), ReportFields(data: [8])]), to: peer))
        #expect(try await seen.wait(for: 2) == [[7], [8]])
        try await Task.sleep(for: .milliseconds(100))  // the reader is back waiting in poll(2)
        let start = ContinuousClock.now
        await scanner.stopScanning()
        // The reader waits in poll(2) with no timeout: only the eventfd ends it, so a stop that did not wake it would
        // never return. The bound only has to tell prompt from never, on a machine that may be very busy.
        #expect(ContinuousClock.now - start < .seconds(10))
        #expect(Self.send(advertisingReportEvent([ReportFields(data: [9])]), to: peer))
        try await Task.sleep(for: .milliseconds(100))
        #expect(seen.all == [[7], [8]], "no callback after stopScanning()")
        await scanner.close()
        let written = try await commands.wait(for: 1).first
        #expect(written == BlueZRadioTests.scanCommands + [bytes("01 0C 20 02 00 00")])
        Glibc.close(peer)

        let (advertiserSocket, advertiserPeer) = try Self.pair()
        let advertiserCommands = Self.answering(at: advertiserPeer)
        var random = SeededRandom(seed: BlueZRadioTests.addressSeed)
        let advertiser = try BlueZAdvertiser(adapter: 0, options: BlueZRadioTests.fast(), randomNumbers: &random) {
            _ throws(HCISocketError) in advertiserSocket
        }
        try await advertiser.startAdvertising(BlueZRadioTests.advert)
        await advertiser.close()
        #expect(
            try await advertiserCommands.wait(for: 1).first
                == BlueZRadioTests.advertiseCommands + [bytes("01 0A 20 01 00")])
        Glibc.close(advertiserPeer)
    }
}
