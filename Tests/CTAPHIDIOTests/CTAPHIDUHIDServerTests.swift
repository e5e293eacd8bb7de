import CTAP2
import CTAPHID
import CTAPHIDIO
import Foundation
import Glibc
import NIOCore
import NIOPosix
import Testing
import UHID

/// The uhid device against a fake kernel: exact events in and out over a socket pair.
@Suite(.timeLimit(.minutes(1)))
struct CTAPHIDUHIDServerTests {
    /// Runs `body` with a started device, then closes it and checks it said `UHID_DESTROY`.
    func withDevice(
        wink: WinkHandler? = nil,
        handler: @escaping CBORHandler,
        _ body: (FakeKernel, CTAPHIDUHIDServer) async throws -> Void
    ) async throws {
        let (kernel, file) = try FakeKernel.make()
        var configuration = CTAPHIDUHIDServer.Configuration()
        configuration.phys = "test/uhid"
        let server = try await CTAPHIDUHIDServer.start(
            file: file, configuration: configuration, wink: wink, handler: handler)
        #expect(try await kernel.next() == .create2(try FIDOHIDDevice.create(phys: "test/uhid")))
        try kernel.send(.start(flags: 0))
        try kernel.send(.open)
        do {
            try await body(kernel, server)
        } catch {
            await server.close()
            throw error
        }
        await server.close()
        var last = try await kernel.next()
        while case .input2 = last { last = try await kernel.next() }  // late keepalives
        #expect(last == .destroy)
    }

    @Test func createsTheDeviceWithTheFIDODescriptor() async throws {
        let (kernel, file) = try FakeKernel.make()
        var configuration = CTAPHIDUHIDServer.Configuration()
        configuration.phys = "passkey/uhid/7"
        let server = try await CTAPHIDUHIDServer.start(file: file, configuration: configuration) { _, _ in [0] }
        let bytes = try #require(try await kernel.nextBytes())
        #expect(bytes == (try UHIDEvent.create2(FIDOHIDDevice.create(phys: "passkey/uhid/7")).bytes()))
        #expect(server.device.name == "passkey (software authenticator)")
        #expect(server.device.vendor == 0x1209 && server.device.product == 0x0001 && server.device.bus == 3)
        await server.close()
    }

    @Test func initThenGetInfoFromTheRealAuthenticator() async throws {
        let authenticator = Authenticator(
            environment: AuthenticatorEnvironment(
                store: InMemoryCredentialStore(), userInteraction: UnattendedApproval()))
        try await withDevice(handler: { request, _ in await authenticator.handle(request) }) { kernel, _ in
            let cid = try await kernel.initialize()
            #expect(cid != 0 && cid != 0xFFFF_FFFF)
            try kernel.send(cid, 0x10, [0x04])  // authenticatorGetInfo
            let reply = try await kernel.receive(cid)
            let expected = await authenticator.handle([0x04])
            #expect(reply == HostMessage(command: 0x10, payload: expected))
            #expect(reply.payload.first == 0x00)
            #expect(reply.payload.count > 64, "getInfo spans several reports")
            let text = String(decoding: reply.payload, as: UTF8.self)
            #expect(text.contains("FIDO_2_0"))
        }
    }

    @Test func reportsWithoutTheReportNumberWorkToo() async throws {
        try await withDevice(handler: { request, _ in [0x00] + request }) { kernel, _ in
            let cid = try await kernel.initialize(withReportNumber: false)
            let request = [0x01] + (0..<200).map { UInt8(truncatingIfNeeded: $0 * 7) }
            try kernel.send(cid, 0x10, request, withReportNumber: false)
            #expect(try await kernel.receive(cid) == HostMessage(command: 0x10, payload: [0x00] + request))
        }
    }

    @Test func keepalivesWhileTheScriptedUserDecides() async throws {
        let user = ScriptedUser()
        try await withDevice(handler: { _, setStatus in
            setStatus(.userPresenceNeeded)
            return await user.decision() ? [0x00, 0xA0] : [0x27]
        }) { kernel, _ in
            let cid = try await kernel.initialize()
            try kernel.send(cid, 0x10, [0x01, 0xA0])
            // The user answers only after the host has seen two keepalives saying UP needed.
            var keepalives: [UInt8] = []
            while keepalives.filter({ $0 == 2 }).count < 2 {
                let report = try #require(try await kernel.nextReport(), "keepalives stopped")
                #expect(Array(report.prefix(7)) == bigEndian(cid) + [0xBB, 0x00, 0x01])
                keepalives.append(report[7])
            }
            #expect(keepalives.allSatisfy { $0 == 1 || $0 == 2 })
            user.approve()
            let reply = try await kernel.receive(cid)
            #expect(reply == HostMessage(command: 0x10, payload: [0x00, 0xA0]))
        }
    }

    /// A request that waits for the person until only cancellation ends it (or closing the device, if the test fails
    /// first), opening `waiting` once it waits; `saw` records the cancellation.
    static func waitingForCancellation(_ saw: Shared<Bool>, waiting: Gate = Gate()) -> CBORHandler {
        { _, setStatus in
            setStatus(.userPresenceNeeded)
            waiting.open()
            guard await Gate().wait() else {
                saw.set(true)
                return [CTAPError.keepaliveCancel.rawValue]
            }
            return [0x00]
        }
    }

    @Test func cancelEndsTheWait() async throws {
        let sawCancellation = Shared(false)
        try await withDevice(handler: Self.waitingForCancellation(sawCancellation)) { kernel, _ in
            let cid = try await kernel.initialize()
            try kernel.send(cid, 0x10, [0x02])
            var keepalive = try #require(try await kernel.nextReport())
            while keepalive[7] == 0x01 { keepalive = try #require(try await kernel.nextReport()) }
            #expect(Array(keepalive.prefix(8)) == bigEndian(cid) + [0xBB, 0x00, 0x01, 0x02])
            try kernel.send(cid, 0x11, [])
            #expect(try await kernel.receive(cid) == HostMessage(command: 0x10, payload: [0x2D]))
            #expect(sawCancellation.get())
        }
    }

    /// A browser that gives up by closing the hidraw node, without CTAPHID_CANCEL: the kernel's UHID_CLOSE cancels
    /// the request still running (a phone behind the key would otherwise keep its QR code up and its radio on).
    @Test func theLastReaderClosingTheDeviceCancelsTheRunningRequest() async throws {
        let sawCancellation = Shared(false)
        let waiting = Gate()
        try await withDevice(handler: Self.waitingForCancellation(sawCancellation, waiting: waiting)) { kernel, _ in
            let cid = try await kernel.initialize()
            try kernel.send(cid, 0x10, [0x02])
            #expect(await waiting.wait())
            try kernel.send(.close)
            #expect(try await kernel.receive(cid) == HostMessage(command: 0x10, payload: [0x2D]))
            #expect(sawCancellation.get())
        }
    }

    @Test func featureReportRequestsAreRefusedAndOddEventsIgnored() async throws {
        try await withDevice(handler: { _, _ in [0x00] }) { kernel, _ in
            try kernel.send(.getReport(id: 0x0102_0304, reportNumber: 0, type: .feature))
            #expect(try await kernel.next() == .getReportReply(id: 0x0102_0304, error: 5, data: []))
            try kernel.send(.setReport(id: 77, reportNumber: 0, type: .feature, data: [1, 2]))
            #expect(try await kernel.next() == .setReportReply(id: 77, error: 5))

            try kernel.send(bytes: [99, 0, 0, 0] + Array(repeating: 0, count: 4376))  // unknown type
            try kernel.send(bytes: [6, 0, 0, 0, 0xFF])  // a short OUTPUT
            try kernel.send(.output(data: Array(repeating: 0xFF, count: 63), type: .output))  // not a report
            try kernel.send(.output(data: [0] + Array(repeating: 0xFF, count: 64), type: .feature))
            #expect(try await kernel.nextBytes(timeout: .milliseconds(300)) == nil)

            let cid = try await kernel.initialize()
            try kernel.send(cid, 0x10, [0x04])
            #expect(try await kernel.receive(cid) == HostMessage(command: 0x10, payload: [0x00]))
        }
    }

    /// A host that stops reading must not stop the event loop that writes the device's reports: the loop is shared
    /// with everything else in the process (a full socket buffer once blocked the process-wide loop for every test).
    @Test func aHostThatStopsReadingLosesReportsButNeverStopsTheEventLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let (kernel, file) = try FakeKernel.make()
        var configuration = CTAPHIDUHIDServer.Configuration()
        configuration.phys = "test/uhid"
        configuration.tickInterval = .milliseconds(1)
        configuration.protocolConfiguration.keepaliveInterval = .milliseconds(1)
        let server = try await CTAPHIDUHIDServer.start(
            file: file, configuration: configuration, group: group,
            handler: { _, setStatus in
                setStatus(.userPresenceNeeded)
                return await Gate().wait() ? [0x00] : [CTAPError.keepaliveCancel.rawValue]
            })
        #expect(try await kernel.next() == .create2(try FIDOHIDDevice.create(phys: "test/uhid")))
        try kernel.send(.start(flags: 0))
        try kernel.send(.open)
        let cid = try await kernel.initialize()
        try kernel.send(cid, 0x10, [0x01])
        // About 400 keepalives of 4,380 bytes each, far more than a socket buffer holds, and none read.
        try await Task.sleep(for: .milliseconds(400))
        try await group.next().submit {}.get()
        await server.close()
        try await group.shutdownGracefully()
    }

    @Test func outputReportsSentAsSetReportAreAnswered() async throws {
        try await withDevice(handler: { _, _ in [0x00, 0x42] }) { kernel, _ in
            let initReport = hostReports(0xFFFF_FFFF, 0x06, [1, 2, 3, 4, 5, 6, 7, 8])[0]
            try kernel.send(.setReport(id: 5, reportNumber: 0, type: .output, data: [0] + initReport))
            #expect(try await kernel.next() == .setReportReply(id: 5, error: 0))
            let reply = try await kernel.receive(0xFFFF_FFFF)
            #expect(reply.command == 0x06 && Array(reply.payload.prefix(8)) == [1, 2, 3, 4, 5, 6, 7, 8])
            try kernel.send(.setReport(id: 6, reportNumber: 0, type: .output, data: [0, 1, 2]))
            #expect(try await kernel.next() == .setReportReply(id: 6, error: 22))  // EINVAL
        }
    }

    @Test func closeCancelsRunningRequestsAndDestroysTheDevice() async throws {
        let started = Gate()
        let cancelled = Gate()
        let (kernel, file) = try FakeKernel.make()
        let server = try await CTAPHIDUHIDServer.start(file: file) { _, _ in
            started.open()
            if !(await Gate().wait()) { cancelled.open() }
            return [0x2D]
        }
        guard case .create2 = try await kernel.next() else { Issue.record("expected UHID_CREATE2"); return }
        let cid = try await kernel.initialize()
        try kernel.send(cid, 0x10, [0x02])
        await started.wait()
        await server.close()
        try await server.run()  // Returns at once: the server is closed.
        #expect(await cancelled.wait(), "closing cancelled the running request")
        var events: [UHIDEvent] = []
        while let bytes = try await kernel.nextBytes(timeout: .seconds(1)), !bytes.isEmpty {
            events.append(try UHIDEvent(bytes: bytes))
        }
        // Keepalives may precede it; nothing follows UHID_DESTROY, and then the file is closed (end of file).
        #expect(events.last == .destroy)
        #expect(events.dropLast().allSatisfy { if case .input2 = $0 { true } else { false } })
        #expect(try await kernel.nextBytes(timeout: .milliseconds(100)) == [])
        await server.close()  // Twice is harmless.
    }

    @Test func runEndsWhenTheDeviceFileEnds() async throws {
        let (kernel, file) = try FakeKernel.make()
        let server = try await CTAPHIDUHIDServer.start(file: file) { _, _ in [0] }
        kernel.hangUp()
        try await server.run()
        await server.close()
    }
}

/// A user who decides when the test says so.
final class ScriptedUser: Sendable {
    private let approved = Gate()

    func approve() { approved.open() }

    /// Approves once the test says so; refuses if the request is cancelled first.
    func decision() async -> Bool { await approved.wait() }
}

/// Opening the real device on this machine, and the messages that explain failures.
struct UHIDOpenErrorTests {
    /// What a plain `open` of /dev/uhid does here, to compare against.
    static let realOpenErrno: Int32? = {
        let descriptor = open("/dev/uhid", O_RDWR | O_CLOEXEC)
        if descriptor >= 0 {
            close(descriptor)
            return nil
        }
        return errno
    }()

    @Test(.enabled(if: realOpenErrno.map { [ENOENT, ENODEV, ENXIO].contains($0) } ?? false, "this kernel has uhid"))
    func aKernelWithoutUHIDIsExplained() throws {
        #expect(throws: UHIDError.kernelLacksUHID(path: "/dev/uhid")) { try UHIDFileDescriptor.open() }
        let message = String(describing: UHIDError.kernelLacksUHID(path: "/dev/uhid"))
        #expect(message.hasPrefix("this kernel has no uhid support (/dev/uhid missing"))
        #expect(message.contains("sudo modprobe uhid"))
    }

    @Test func aDeviceNodeWithoutADriverIsExplained() throws {
        // The uhid character device (10, 239) on a kernel without the driver: open fails with ENODEV.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("uhid-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("uhid").path
        guard mknod(path, S_IFCHR | 0o600, dev_t(10 << 8 | 239)) == 0 else {
            withKnownIssue("mknod is not permitted here") { Issue.record("mknod failed: errno \(errno)") }
            return
        }
        let plain = open(path, O_RDWR | O_CLOEXEC)
        if plain >= 0 {
            close(plain)
            return  // This kernel has uhid: nothing to explain.
        }
        #expect(throws: UHIDError.kernelLacksUHID(path: path)) { try UHIDFileDescriptor.open(path: path) }
    }

    @Test func errnoValuesAreClassified() {
        #expect(UHIDError(openErrno: ENOENT, path: "/dev/uhid") == .kernelLacksUHID(path: "/dev/uhid"))
        #expect(UHIDError(openErrno: ENODEV, path: "/dev/uhid") == .kernelLacksUHID(path: "/dev/uhid"))
        #expect(UHIDError(openErrno: EACCES, path: "/dev/uhid") == .permissionDenied(path: "/dev/uhid"))
        #expect(UHIDError(openErrno: EPERM, path: "/dev/uhid") == .permissionDenied(path: "/dev/uhid"))
        #expect(UHIDError(openErrno: EMFILE, path: "/dev/uhid") == .openFailed(path: "/dev/uhid", errno: EMFILE))
        let denied = String(describing: UHIDError.permissionDenied(path: "/dev/uhid"))
        #expect(denied.hasPrefix("no permission to open /dev/uhid"))
        #expect(denied.contains(#"KERNEL=="uhid", GROUP="uhid", MODE="0660""#))
    }

    @Test func aMissingFileIsAKernelWithoutUHID() {
        #expect(throws: UHIDError.kernelLacksUHID(path: "/nonexistent/uhid")) {
            try UHIDFileDescriptor.open(path: "/nonexistent/uhid")
        }
    }
}

struct HidrawLookupTests {
    @Test func findsTheNodeWhoseDeviceMatches() async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("hidraw-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        func node(_ name: String, _ uevent: String) throws {
            let device = root.appendingPathComponent("\(name)/device")
            try FileManager.default.createDirectory(at: device, withIntermediateDirectories: true)
            try uevent.write(to: device.appendingPathComponent("uevent"), atomically: true, encoding: .utf8)
        }
        let wanted = [
            "HID_ID": "0003:00001209:00000001", "HID_NAME": "passkey (software authenticator)", "HID_PHYS": "p/2",
        ]
        try node("hidraw0", "DRIVER=hid-generic\nHID_ID=0003:0000046D:0000C52B\nHID_NAME=Logitech\nHID_PHYS=usb\n")
        try node("hidraw1", "HID_ID=0003:00001209:00000001\nHID_NAME=passkey (software authenticator)\nHID_PHYS=p/1\n")
        #expect(HidrawLookup.node(matching: wanted, sysfsClass: root.path) == nil)
        try node("hidraw2", "HID_ID=0003:00001209:00000001\nHID_NAME=passkey (software authenticator)\nHID_PHYS=p/2\n")
        #expect(HidrawLookup.node(matching: wanted, sysfsClass: root.path) == "/dev/hidraw2")
        #expect(
            await HidrawLookup.waitForNode(matching: wanted, timeout: .zero, sysfsClass: root.path) == "/dev/hidraw2")
        #expect(HidrawLookup.node(matching: wanted, sysfsClass: root.appendingPathComponent("none").path) == nil)
    }
}
