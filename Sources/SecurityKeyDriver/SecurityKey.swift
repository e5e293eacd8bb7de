import CTAP2
import CTAPHID
import CTAPHIDIO
import Synchronization

/// What a security key is doing while it handles a request, from its CTAPHID keepalives.
public enum SecurityKeyStatus: Hashable, Sendable {
    /// Working on the request.
    case processing
    /// Waiting for the user to touch it: the moment to say "touch your security key".
    case touchNeeded
    /// Busy with another program's request (CTAPHID ERR_CHANNEL_BUSY): the request is sent again shortly.
    case busyElsewhere
}

/// Settings of a ``SecurityKey``.
public struct SecurityKeyOptions: Sendable {
    /// Told when the key starts waiting for a touch, and when it is working again; called on an event loop, so it
    /// must return at once.
    public var onStatus: (@Sendable (SecurityKeyStatus) -> Void)?
    /// The time limit of requests sent with ``SecurityKey/send(ctapCommand:timeout:)``, which may wait for a touch
    /// (default 60 s).
    public var requestTimeout: Duration = .seconds(60)
    /// The time limit of the platform's own steps: the channel and getInfo (default 10 s).
    public var commandTimeout: Duration = .seconds(10)
    /// How long to wait before sending a request again that the key refused as busy with another program's
    /// (default 100 ms); it is sent again until its time limit.
    public var busyRetryInterval: Duration = .milliseconds(100)
    /// The CTAPHID connection's settings.
    public var connection = CTAPHIDHostConnection.Configuration()

    /// The defaults: no status reports.
    public init() {}
}

/// A FIDO2 security key, as a platform talks to it: CTAP2 requests over CTAPHID, sent as they are; user
/// verification and the PIN are the WebAuthn engine's, through `SecurityKeyAuthenticator` (Docs/SecurityKey.md).
///
/// ```swift
/// var options = SecurityKeyOptions()
/// options.onStatus = { status in if status == .touchNeeded { print("Touch your security key") } }
/// let key = try await SecurityKey.open(try SecurityKeySpec(parsing: "auto"), options: options)
/// let info = try await key.getInfo()
/// let response = try await key.send(ctapCommand: makeCredentialMessage)   // status byte and CBOR
/// await key.close()
/// ```
///
/// One request at a time: a second one while the first runs fails with ``SecurityKeyError/busy``.
public actor SecurityKey {
    /// Where the key is: `/dev/hidraw3`, `udp://127.0.0.1:8111`.
    public nonisolated let name: String
    /// What the key said about itself when its channel was allocated.
    public nonisolated let deviceInfo: CTAPHIDDeviceInfo
    private let connection: CTAPHIDHostConnection
    private let options: SecurityKeyOptions
    private var info: AuthenticatorInfo?
    private var busy = false
    /// Set by ``cancel()``; the request in progress then ends with ``SecurityKeyError/cancelled``.
    private nonisolated let cancelRequested = Mutex(false)

    private init(connection: CTAPHIDHostConnection, deviceInfo: CTAPHIDDeviceInfo, options: SecurityKeyOptions) {
        self.connection = connection
        self.deviceInfo = deviceInfo
        self.options = options
        name = connection.description
    }

    // MARK: Opening and closing

    /// Opens the key and allocates a CTAPHID channel.
    ///
    /// - Throws: ``SecurityKeyError``: no key or several (`auto`), the node cannot be opened (with the udev rule
    ///   that is missing), the address cannot be resolved, the device does not answer or is not FIDO2.
    public static func open(
        _ spec: SecurityKeySpec, options: SecurityKeyOptions = SecurityKeyOptions()
    ) async throws(SecurityKeyError) -> SecurityKey {
        let connection: CTAPHIDHostConnection
        switch spec {
        case .hidraw(let path):
            connection = try openHidraw(path, options: options)
        case .auto:
            let devices = HidrawLookup.fidoDevices()
            guard let first = devices.first else { throw .noSecurityKeyFound }
            guard devices.count == 1 else { throw .severalSecurityKeysFound(devices) }
            connection = try openHidraw(first.path, options: options)
        case .udp(let host, let port):
            do {
                connection = try await CTAPHIDHostConnection.udp(
                    host: host, port: port, configuration: options.connection)
            } catch {
                throw .cannotConnect(address: "\(spec)", reason: "\(error)")
            }
        }
        return try await open(connection, options: options)
    }

    /// A key over an open connection: allocates its channel and checks that it speaks CTAP2.
    private static func open(
        _ connection: CTAPHIDHostConnection, options: SecurityKeyOptions
    ) async throws(SecurityKeyError) -> SecurityKey {
        do {
            let deviceInfo = try await connection.allocateChannel(timeout: options.commandTimeout)
            guard deviceInfo.capabilities.contains(.cbor) else {
                throw SecurityKeyError.notFIDO2(connection.description)
            }
            return SecurityKey(connection: connection, deviceInfo: deviceInfo, options: options)
        } catch {
            await connection.close()
            switch error {
            case let error as SecurityKeyError: throw error
            case let error as CTAPHIDConnectionError: throw SecurityKeyError(error, timeout: options.commandTimeout)
            default: throw .connection(.closed)
            }
        }
    }

    private static func openHidraw(_ path: String, options: SecurityKeyOptions) throws(SecurityKeyError)
        -> CTAPHIDHostConnection
    {
        do {
            return try CTAPHIDHostConnection.hidraw(path: path, configuration: options.connection)
        } catch {
            throw .cannotOpen(error)
        }
    }

    /// Closes the connection; a request in progress fails. Closing twice is harmless.
    public func close() async {
        await connection.close()
    }

    // MARK: Requests

    /// The key's authenticatorGetInfo, read once and kept (until a request shows the PIN state changed).
    public func getInfo() async throws(SecurityKeyError) -> AuthenticatorInfo {
        try enter()
        defer { leave() }
        return try await currentInfo()
    }

    /// Sends one CTAP2 request (command byte and CBOR parameters) as it is and returns the key's answer (status byte
    /// and CBOR), keepalives reported through ``SecurityKeyOptions/onStatus``. User verification and the PIN are
    /// the caller's (the WebAuthn engine's, Docs/SecurityKey.md); error statuses of the request itself are returned,
    /// not thrown.
    ///
    /// - Parameter timeout: How long the key may take, waiting for a touch included (default
    ///   ``SecurityKeyOptions/requestTimeout``).
    /// - Throws: ``SecurityKeyError``: time limits, cancellation, a broken connection.
    public func send(ctapCommand message: [UInt8], timeout: Duration? = nil) async throws(SecurityKeyError)
        -> [UInt8]
    {
        try enter()
        defer { leave() }
        let response = try await exchange(message, timeout: timeout ?? options.requestTimeout)
        // A clientPIN or config request may have changed what getInfo says (a PIN set, a UV block).
        if message.first == CTAPCommand.clientPIN.rawValue || message.first == CTAPCommand.config.rawValue {
            info = nil
        }
        return response
    }

    /// Cancels the request in progress: the key gets `CTAPHID_CANCEL`, and the request ends with
    /// ``SecurityKeyError/cancelled``. Without a request in progress, nothing happens.
    public nonisolated func cancel() {
        cancelRequested.withLock { $0 = true }
        connection.cancel()
    }

    // MARK: Plumbing

    private func currentInfo() async throws(SecurityKeyError) -> AuthenticatorInfo {
        if let info { return info }
        let response = try await exchange([CTAPCommand.getInfo.rawValue], timeout: options.commandTimeout)
        do {
            let read = try AuthenticatorInfo(ctapResponse: response)
            info = read
            return read
        } catch {
            guard response.first == 0 else { throw .refused(step: "getInfo", status: error) }
            throw .invalidResponse("getInfo: \(error)")
        }
    }

    /// One CTAPHID_CBOR exchange, keepalives passed on as status changes. A key busy with another program's request
    /// (ERR_CHANNEL_BUSY: hidraw and UDP keys serve one request at a time for everybody) gets it again every
    /// ``SecurityKeyOptions/busyRetryInterval`` until `timeout`.
    private func exchange(_ message: [UInt8], timeout: Duration) async throws(SecurityKeyError) -> [UInt8] {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        var refusedAsBusy = false
        while true {
            do {
                return try await exchangeOnce(message, timeout: deadline - clock.now, limit: timeout)
            } catch {
                let busy: Bool
                switch error {
                case .connection(.exchange(.deviceError(let code))) where code == .channelBusy: busy = true
                case .timedOut where refusedAsBusy: throw .keyBusy(timeout)
                default: busy = false
                }
                guard busy else { throw error }
                guard clock.now.advanced(by: options.busyRetryInterval) < deadline else { throw .keyBusy(timeout) }
                refusedAsBusy = true
                options.onStatus?(.busyElsewhere)
                do {
                    try await Task.sleep(for: options.busyRetryInterval)
                } catch {
                    throw .cancelled
                }
            }
        }
    }

    /// - Parameter limit: The whole request's time limit, for the error that says it passed.
    private func exchangeOnce(_ message: [UInt8], timeout: Duration, limit: Duration) async throws(SecurityKeyError)
        -> [UInt8]
    {
        if cancelRequested.withLock({ $0 }) { throw .cancelled }
        let reporter = options.onStatus.map(StatusReporter.init)
        let response: [UInt8]
        do {
            response = try await connection.exchange(
                .cbor, payload: message, timeout: timeout, onKeepalive: reporter.map { reporter in reporter.keepalive })
        } catch {
            if cancelRequested.withLock({ $0 }) || Task.isCancelled { throw .cancelled }
            throw SecurityKeyError(error, timeout: limit)
        }
        if cancelRequested.withLock({ $0 }) || Task.isCancelled {
            // The key's answer to the cancellation, or a result the caller no longer wants.
            throw .cancelled
        }
        guard !response.isEmpty else { throw .invalidResponse("an empty CTAPHID_CBOR response") }
        return response
    }

    private func enter() throws(SecurityKeyError) {
        guard !busy else { throw .busy }
        busy = true
        cancelRequested.withLock { $0 = false }
    }

    private func leave() {
        busy = false
    }
}

/// Turns one exchange's keepalives into status changes: the first keepalive, then each that differs.
private final class StatusReporter: Sendable {
    private let report: @Sendable (SecurityKeyStatus) -> Void
    private let last = Mutex<SecurityKeyStatus?>(nil)

    init(_ report: @escaping @Sendable (SecurityKeyStatus) -> Void) { self.report = report }

    @Sendable func keepalive(_ keepalive: KeepaliveStatus) {
        let status: SecurityKeyStatus = keepalive == .userPresenceNeeded ? .touchNeeded : .processing
        let changed = last.withLock { previous in
            defer { previous = status }
            return previous != status
        }
        if changed { report(status) }
    }
}
