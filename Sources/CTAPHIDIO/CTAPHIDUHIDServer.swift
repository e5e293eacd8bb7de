import CTAPHID
import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization
import UHID

#if canImport(Glibc)
    import Glibc
#endif

/// The one host of a uhid device: the kernel, which passes on what every program with the hidraw node open
/// writes, and gives each of them every report (CTAPHID channels tell the programs apart).
public struct UHIDHost: Hashable, Sendable, CustomStringConvertible {
    public init() {}
    public var description: String { "uhid" }
}

/// A virtual FIDO security key: CTAPHID reports through /dev/uhid, so browsers and libfido2 find the
/// authenticator as a HID device (/dev/hidrawN) like a USB key.
///
/// Starting writes `UHID_CREATE2` with ``FIDOHIDDevice/reportDescriptor``. A dedicated thread then reads the
/// kernel's events: each `UHID_OUTPUT` carries one report (after its report number, which is stripped), and every
/// report of the authenticator goes back in a `UHID_INPUT2`. An output report that arrives as `UHID_SET_REPORT` is
/// taken the same way; `UHID_GET_REPORT` and other `UHID_SET_REPORT`s (feature reports, which a FIDO key does not
/// have) are answered with EIO. Closing writes `UHID_DESTROY`, and the device
/// disappears.
///
/// ```swift
/// let server = try await CTAPHIDUHIDServer.start(file: UHIDFileDescriptor.open()) { request, setStatus in
///     await authenticator.handle(request, setStatus)
/// }
/// try await server.run()
/// ```
public final class CTAPHIDUHIDServer: Sendable {
    /// Settings of the device.
    public struct Configuration: Sendable {
        /// Timeouts, channel limit and device version of the CTAPHID layer.
        public var protocolConfiguration = CTAPHIDStateMachine<UHIDHost>.Configuration()
        /// How often the server checks for due keepalives and timeouts (default 50 ms).
        public var tickInterval: Duration = .milliseconds(50)
        /// The physical location the device reports (`HID_PHYS`); unique per process by default, so
        /// ``HidrawLookup`` finds this device among several.
        public var phys = "passkey/uhid/\(getpid())"

        /// The default configuration.
        public init() {}
    }

    /// What the device was created as.
    public let device: UHIDCreate2
    private let file: any UHIDDeviceFile
    private let logger: Logger
    private let driver: NIOLoopBound<CTAPHIDDriver<UHIDHost>>
    private let eventLoop: any EventLoop
    /// Succeeds when the reader thread has ended (interrupted or end of file), fails if a read failed.
    private let finished: EventLoopPromise<Void>
    private let closing = Mutex(false)

    private init(
        device: UHIDCreate2, file: any UHIDDeviceFile, logger: Logger, driver: NIOLoopBound<CTAPHIDDriver<UHIDHost>>,
        eventLoop: any EventLoop, finished: EventLoopPromise<Void>
    ) {
        self.eventLoop = eventLoop
        self.device = device
        self.file = file
        self.logger = logger
        self.driver = driver
        self.finished = finished
    }

    /// Creates the device and starts answering.
    ///
    /// - Parameters:
    ///   - file: The uhid device file, usually `UHIDFileDescriptor.open()`. The server owns it from now on, and
    ///     closes it when it closes (or when starting fails).
    ///   - configuration: Protocol timeouts and limits, and the device's `phys`.
    ///   - group: The event loop group to run on.
    ///   - logger: Receives one debug line per transaction and per device event; never payload bytes.
    ///   - wink: Called for `CTAPHID_WINK`, if given.
    ///   - handler: The authenticator.
    /// - Throws: ``UHIDError/writeFailed(event:errno:)`` if the kernel refuses to create the device.
    public static func start(
        file: any UHIDDeviceFile,
        configuration: Configuration = Configuration(),
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton,
        logger: Logger = Logger(label: "passkey.uhid"),
        wink: WinkHandler? = nil,
        handler: @escaping CBORHandler
    ) async throws -> CTAPHIDUHIDServer {
        try await start(
            file: file, configuration: configuration, group: group, logger: logger, wink: wink, now: { .now },
            handler: handler)
    }

    /// ``start(file:configuration:group:logger:wink:handler:)`` with the clock of the protocol's timeouts; tests pass
    /// one that follows their event loop.
    static func start(
        file: any UHIDDeviceFile,
        configuration: Configuration,
        group: any EventLoopGroup,
        logger: Logger,
        wink: WinkHandler?,
        now: @escaping @Sendable () -> ContinuousClock.Instant,
        handler: @escaping CBORHandler
    ) async throws -> CTAPHIDUHIDServer {
        let device: UHIDCreate2
        do {
            device = try FIDOHIDDevice.create(phys: configuration.phys)
            try file.write(UHIDEvent.create2(device).bytes())
        } catch {
            file.close()
            throw error
        }
        let eventLoop = group.next()
        let driver: NIOLoopBound<CTAPHIDDriver<UHIDHost>>
        do {
            driver = try await eventLoop.submit {
                let driver = CTAPHIDDriver<UHIDHost>(
                    configuration: configuration.protocolConfiguration,
                    tickInterval: configuration.tickInterval,
                    eventLoop: eventLoop,
                    logger: logger,
                    wink: wink,
                    handler: handler,
                    send: { report, _ in
                        do {
                            try file.write(UHIDEvent.input2(report).bytes())
                        } catch {
                            logger.debug("Cannot send an input report", metadata: ["error": "\(error)"])
                        }
                    },
                    now: now)
                driver.start()
                return NIOLoopBound(driver, eventLoop: eventLoop)
            }.get()
        } catch {
            // The event loop is shutting down: the device cannot be served.
            try? file.write(UHIDEvent.destroy.bytes())
            file.close()
            throw error
        }
        let server = CTAPHIDUHIDServer(
            device: device, file: file, logger: logger, driver: driver, eventLoop: eventLoop,
            finished: eventLoop.makePromise())
        let thread = Thread { [server] in server.readEvents() }
        thread.name = "passkey uhid reader"
        thread.start()
        logger.info("uhid device created", metadata: ["phys": "\(device.phys)"])
        return server
    }

    /// Waits until the server is closed or the device file ends; cancelling the waiting task closes the server.
    /// - Throws: ``UHIDError/readFailed(errno:)`` if reading the device failed.
    public func run() async throws {
        try await withTaskCancellationHandler {
            try await finished.futureResult.get()
        } onCancel: {
            Task { await self.close() }
        }
    }

    /// Cancels every request still being processed, destroys the device (`UHID_DESTROY`) and closes the file.
    /// Closing twice is harmless.
    public func close() async {
        let alreadyClosing = closing.withLock { closing in
            defer { closing = true }
            return closing
        }
        guard !alreadyClosing else {
            try? await finished.futureResult.get()
            return
        }
        let driver = self.driver
        try? await eventLoop.submit { driver.value.stop() }.get()
        do {
            try file.write(UHIDEvent.destroy.bytes())
        } catch {
            logger.debug("Cannot destroy the uhid device", metadata: ["error": "\(error)"])
        }
        file.interrupt()
        try? await finished.futureResult.get()
        file.close()
    }

    // MARK: The reader thread

    /// Reads events until interrupted, at end of file or on a read error; runs on its own thread.
    private func readEvents() {
        do {
            while let bytes = try file.read() {
                handle(bytes)
            }
            finished.succeed()
        } catch {
            logger.error("uhid read failed", metadata: ["error": "\(error)"])
            finished.fail(error)
        }
        let driver = self.driver
        eventLoop.execute { driver.value.stop() }
    }

    private func handle(_ bytes: [UInt8]) {
        let event: UHIDEvent
        do {
            event = try UHIDEvent(bytes: bytes)
        } catch {
            logger.debug("Dropped a malformed uhid event", metadata: ["error": "\(error)", "size": "\(bytes.count)"])
            return
        }
        switch event {
        case .output(let data, let type):
            guard type == .output, let report = FIDOHIDDevice.report(fromOutput: data) else {
                logger.debug(
                    "Dropped output that is not one CTAPHID report",
                    metadata: ["size": "\(data.count)", "type": "\(type.rawValue)"])
                return
            }
            receive(report)
        case .setReport(let id, _, .output, let data):
            // An output report sent as a SET_REPORT request (hidraw uses UHID_OUTPUT, but other kernel paths may not).
            guard let report = FIDOHIDDevice.report(fromOutput: data) else {
                reply(.setReportReply(id: id, error: UInt16(EINVAL)))
                return
            }
            reply(.setReportReply(id: id, error: 0))
            receive(report)
        case .getReport(let id, let number, _):
            logger.debug("Refused GET_REPORT", metadata: ["report": "\(number)"])
            reply(.getReportReply(id: id, error: UInt16(EIO), data: []))
        case .setReport(let id, let number, _, _):
            logger.debug("Refused SET_REPORT", metadata: ["report": "\(number)"])
            reply(.setReportReply(id: id, error: UInt16(EIO)))
        case .close:
            // The last reader closed the hidraw node (a browser gave up without CTAPHID_CANCEL): nothing is left to
            // answer, so a request still running (a phone behind the key, a prompt) is cancelled.
            logger.debug("uhid event", metadata: ["event": "\(event)"])
            let driver = self.driver
            eventLoop.execute { driver.value.hostClosed() }
        case .start, .stop, .open:
            logger.debug("uhid event", metadata: ["event": "\(event)"])
        case .unknown(let type):
            logger.debug("Ignored a uhid event of unknown type", metadata: ["type": "\(type)"])
        case .create2, .destroy, .input2, .getReportReply, .setReportReply:
            logger.debug("Ignored a uhid event only devices send", metadata: ["type": "\(event.type)"])
        }
    }

    private func receive(_ report: [UInt8]) {
        let driver = self.driver
        eventLoop.execute {
            // 64 bytes by construction, so this cannot throw.
            try? driver.value.receive(report: report, from: UHIDHost())
        }
    }

    private func reply(_ event: UHIDEvent) {
        do {
            try file.write(event.bytes())
        } catch {
            logger.debug("Cannot answer a uhid request", metadata: ["error": "\(error)"])
        }
    }
}
