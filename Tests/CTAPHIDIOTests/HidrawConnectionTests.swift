import CTAPHID
import Foundation
import NIOCore
import NIOPosix
import Synchronization
import TestSupport
import Testing
import UHID

@testable import CTAPHIDIO

#if canImport(Glibc)
    import Glibc
#endif

/// A security key at the other end of a hidraw stand-in: one end of an `AF_UNIX` `SOCK_SEQPACKET` pair, which keeps
/// report boundaries as hidraw does. A thread of its own reads what the host writes (65 bytes: report number 0, then
/// the report), runs the device-side CTAPHID state machine, and writes its reports back as 64-byte reads.
final class FakeHidrawKey: Sendable {
    /// What the key does with a CBOR request: its answer, after optional keepalives.
    typealias Answer = @Sendable (_ request: [UInt8]) -> (keepalives: [KeepaliveStatus], response: [UInt8]?)

    let descriptor: Int32
    private let answer: Answer
    private let writeSizes = Mutex<[Int]>([])
    /// Extra packets written before each report of the device (for hostile tests).
    private let noise: [[UInt8]]
    let finished = Gate()

    /// The sizes of the host's writes, in order.
    var sizes: [Int] { writeSizes.withLock { $0 } }

    /// The key's end, and the host's device file.
    static func make(noise: [[UInt8]] = [], answer: @escaping Answer = { _ in ([], [0x00, 0xA0]) }) throws -> (
        FakeHidrawKey, HidrawDevice
    ) {
        signal(SIGPIPE, SIG_IGN)
        var ends: [Int32] = [-1, -1]
        try #require(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0)
        let key = FakeHidrawKey(descriptor: ends[0], noise: noise, answer: answer)
        Thread { key.serve() }.start()
        return (key, try HidrawDevice(adopting: ends[1], path: "/dev/hidraw-test"))
    }

    private init(descriptor: Int32, noise: [[UInt8]], answer: @escaping Answer) {
        self.descriptor = descriptor
        self.noise = noise
        self.answer = answer
    }

    /// Hangs up: the host's next read sees the end.
    func hangUp() { shutdown(descriptor, Int32(SHUT_RDWR)) }

    private func serve() {
        var machine = CTAPHIDStateMachine<Int>(channelIDSource: SeededRandom(seed: 3))
        var buffer = [UInt8](repeating: 0, count: 256)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            writeSizes.withLock { $0.append(count) }
            guard count == 65, buffer[0] == 0 else { continue }
            let report = Array(buffer[1..<65])
            var actions = (try? machine.receive(report: report, from: 0, now: .now)) ?? []
            while !actions.isEmpty {
                var next: [CTAPHIDStateMachine<Int>.Action] = []
                for action in actions {
                    switch action {
                    case .send(let report, _):
                        for packet in noise { send(packet) }
                        send(report)
                    case .dispatchCBOR(let transaction, let request):
                        let (keepalives, response) = answer(request)
                        for status in keepalives {
                            next += machine.keepaliveStatus(status, for: transaction, now: .now)
                        }
                        if let response { next += machine.cborResponse(response, for: transaction, now: .now) }
                    case .cancel(let transaction):
                        next += machine.cborResponse([0x2D], for: transaction, now: .now)
                    case .wink:
                        break
                    }
                }
                actions = next
            }
        }
        close(descriptor)
        finished.open()
    }

    private func send(_ packet: [UInt8]) {
        _ = packet.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }
}

struct HidrawConnectionTests {
    static func connect(_ device: HidrawDevice) -> CTAPHIDHostConnection {
        CTAPHIDHostConnection.hidraw(
            device: device, configuration: CTAPHIDHostConnection.Configuration(),
            eventLoop: MultiThreadedEventLoopGroup.singleton.next())
    }

    @Test func writesCarryReportNumberZeroAndReadsAreWholeReports() async throws {
        let (key, device) = try FakeHidrawKey.make()
        let connection = Self.connect(device)
        let info = try await connection.allocateChannel(timeout: .seconds(10))
        #expect(info.capabilities == [.wink, .cbor, .nmsg])
        let payload = (0..<1000).map { UInt8(truncatingIfNeeded: $0) }
        #expect(try await connection.exchange(.ping, payload: payload, timeout: .seconds(10)) == payload)
        #expect(try await connection.exchange(.cbor, payload: [0x04], timeout: .seconds(10)) == [0x00, 0xA0])
        let expectedReports = 1 + 17 + 1  // the channel, the 1,000-byte ping, the CBOR request
        #expect(key.sizes.count == expectedReports)
        #expect(key.sizes.allSatisfy { $0 == 65 })
        #expect(connection.description == "/dev/hidraw-test")
        await connection.close()
        #expect(await key.finished.wait())
    }

    @Test func keepalivesArePassedOn() async throws {
        let (_, device) = try FakeHidrawKey.make { _ in ([.userPresenceNeeded, .processing], [0x00]) }
        let connection = Self.connect(device)
        let statuses = Mutex<[KeepaliveStatus]>([])
        let response = try await connection.exchange(
            .cbor, payload: [0x01], timeout: .seconds(10),
            onKeepalive: { status in statuses.withLock { $0.append(status) } })
        #expect(response == [0x00])
        #expect(statuses.withLock { $0 } == [.userPresenceNeeded, .processing])
        await connection.close()
    }

    @Test func readsOfOtherSizesAndOtherChannelsAreIgnored() async throws {
        let noise: [[UInt8]] = [[1, 2, 3], [UInt8](repeating: 0xEE, count: 64), [UInt8](repeating: 0, count: 100)]
        let (_, device) = try FakeHidrawKey.make(noise: noise)
        let connection = Self.connect(device)
        #expect(try await connection.exchange(.cbor, payload: [0x04], timeout: .seconds(10)) == [0x00, 0xA0])
        await connection.close()
    }

    @Test func aKeyThatGoesAwayFailsTheExchangeAndSaysSo() async throws {
        let (key, device) = try FakeHidrawKey.make { _ in ([.userPresenceNeeded], nil) }
        let connection = Self.connect(device)
        let exchange = Task {
            try await connection.exchange(
                .cbor, payload: [0x01], timeout: .seconds(30), onKeepalive: { _ in key.hangUp() })
        }
        do {
            _ = try await exchange.value
            Issue.record("an exchange with a key that went away succeeded")
        } catch let error as CTAPHIDConnectionError {
            #expect(error == .deviceFailed(operation: "read", errno: ENODEV))
            #expect("\(error)".contains("went away"))
        }
        // Every later exchange fails the same way.
        await #expect(throws: CTAPHIDConnectionError.deviceFailed(operation: "read", errno: ENODEV)) {
            try await connection.exchange(.ping, payload: [], timeout: .seconds(1))
        }
        await connection.close()
    }

    @Test func cancellingTheTaskCancelsOnTheKey() async throws {
        let (_, device) = try FakeHidrawKey.make { _ in ([.userPresenceNeeded], nil) }
        let connection = Self.connect(device)
        let touch = Gate()
        let exchange = Task {
            try await connection.exchange(
                .cbor, payload: [0x01], timeout: .seconds(30), onKeepalive: { _ in touch.open() })
        }
        #expect(await touch.wait())
        exchange.cancel()
        // The fake key answers CTAPHID_CANCEL with CTAP2_ERR_KEEPALIVE_CANCEL.
        #expect(try await exchange.value == [0x2D])
        await connection.close()
    }

    @Test func closingEndsTheThreadAndLaterExchanges() async throws {
        let (key, device) = try FakeHidrawKey.make()
        let connection = Self.connect(device)
        await connection.close()
        await connection.close()
        #expect(await key.finished.wait())
        await #expect(throws: CTAPHIDConnectionError.closed) {
            try await connection.exchange(.ping, payload: [], timeout: .seconds(1))
        }
    }
}

struct HidrawDiscoveryTests {
    /// A sysfs class folder with hidraw nodes: name → (report descriptor, HID_NAME).
    static func sysfs(_ nodes: [String: ([UInt8]?, String?)]) throws -> TemporaryDirectory {
        let folder = try TemporaryDirectory()
        for (name, (descriptor, hidName)) in nodes {
            try FileManager.default.createDirectory(
                atPath: folder.file("\(name)/device"), withIntermediateDirectories: true)
            if let descriptor { _ = try folder.write(descriptor, to: "\(name)/device/report_descriptor") }
            if let hidName {
                _ = try folder.write(
                    Array("HID_ID=0003:00001050:00000407\nHID_NAME=\(hidName)\n".utf8), to: "\(name)/device/uevent")
            }
        }
        return folder
    }

    static let keyboard: [UInt8] = [0x05, 0x01, 0x09, 0x06, 0xA1, 0x01, 0xC0]

    @Test func fidoDevicesAreFoundByTheirReportDescriptorInNodeOrder() throws {
        let folder = try Self.sysfs([
            "hidraw0": (Self.keyboard, "Keyboard"),
            "hidraw10": (FIDOHIDDevice.reportDescriptor, nil),
            "hidraw2": (Self.keyboard + FIDOHIDDevice.reportDescriptor, "Yubico YubiKey OTP+FIDO+CCID"),
            "hidraw3": (nil, "No descriptor"),
            "hidraw4": ([0x06, 0xD0], "Truncated"),
            "input0": (FIDOHIDDevice.reportDescriptor, "Not hidraw"),
            "hidraw5": (FIDOHIDDevice.reportDescriptor, "Evil\u{1B}[2K\rKey"),
        ])
        let devices = HidrawLookup.fidoDevices(sysfsClass: folder.path, devices: "/dev")
        #expect(
            devices == [
                FIDOHidrawDevice(path: "/dev/hidraw2", name: "Yubico YubiKey OTP+FIDO+CCID"),
                FIDOHidrawDevice(path: "/dev/hidraw5", name: "Evil?[2K?Key"),
                FIDOHidrawDevice(path: "/dev/hidraw10", name: nil),
            ])
        #expect(devices[0].description == "/dev/hidraw2 (Yubico YubiKey OTP+FIDO+CCID)")
        #expect(HidrawLookup.isFIDO(path: "/dev/hidraw0", sysfsClass: folder.path) == false)
        #expect(HidrawLookup.isFIDO(path: "/dev/hidraw10", sysfsClass: folder.path) == true)
        #expect(HidrawLookup.isFIDO(path: "/dev/hidraw99", sysfsClass: folder.path) == nil)
        #expect(HidrawLookup.isFIDO(path: "/tmp/socket", sysfsClass: folder.path) == nil)
        #expect(HidrawLookup.fidoDevices(sysfsClass: folder.file("missing")).isEmpty)
    }

    @Test func aNodeThatIsNotAKeyIsRefusedBeforeItIsOpened() throws {
        let folder = try Self.sysfs(["hidraw0": (Self.keyboard, "Keyboard")])
        #expect(throws: HidrawOpenError.notFIDO(path: "/dev/hidraw0")) {
            try HidrawDevice.open(path: "/dev/hidraw0", sysfsClass: folder.path)
        }
        #expect("\(HidrawOpenError.notFIDO(path: "/dev/hidraw0"))".contains("usage page 0xF1D0"))
    }

    @Test func openErrorsSayWhatToDo() throws {
        #expect(throws: HidrawOpenError.notFound(path: "/nonexistent/hidraw9")) {
            try HidrawDevice.open(path: "/nonexistent/hidraw9")
        }
        #expect(HidrawOpenError(openErrno: EACCES, path: "/dev/hidraw3") == .permissionDenied(path: "/dev/hidraw3"))
        #expect(HidrawOpenError(openErrno: EPERM, path: "/dev/hidraw3") == .permissionDenied(path: "/dev/hidraw3"))
        #expect(HidrawOpenError(openErrno: ENODEV, path: "/dev/hidraw3") == .notFound(path: "/dev/hidraw3"))
        let permission = "\(HidrawOpenError.permissionDenied(path: "/dev/hidraw3"))"
        for advice in ["/dev/hidraw3", "uaccess", "ID_SECURITY_TOKEN", "plugdev", "70-u2f.rules", "sudo"] {
            #expect(permission.contains(advice), "\(advice)")
        }
        // In a person's terms: the system's words, no errno number (issue 24, item 5).
        #expect("\(HidrawOpenError.openFailed(path: "/dev/x", errno: EIO))" == "cannot open /dev/x: input/output error")
    }
}
