import CBOR
import Crypto
import Foundation
import Synchronization
import WebAuthn

/// Every effect the authenticator has, injected once (cf. OpenSK's `Env`).
public struct AuthenticatorEnvironment: Sendable {
    public var store: any CredentialStore
    public var userInteraction: any UserInteraction
    /// Cryptographically secure random bytes; seeded in tests.
    public var randomBytes: @Sendable (Int) -> [UInt8]
    /// A monotonic clock for timeouts.
    public var now: @Sendable () -> ContinuousClock.Instant
    /// The wall clock, for credential creation dates.
    public var currentDate: @Sendable () -> Date
    /// Told about store failures that become CTAP1_ERR_OTHER, so the operator can see them.
    public var reportError: @Sendable (any Error) -> Void

    public init(
        store: any CredentialStore,
        userInteraction: any UserInteraction,
        randomBytes: @escaping @Sendable (Int) -> [UInt8] = AuthenticatorEnvironment.systemRandomBytes,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
        currentDate: @escaping @Sendable () -> Date = { Date() },
        reportError: @escaping @Sendable (any Error) -> Void = { _ in }
    ) {
        self.store = store
        self.userInteraction = userInteraction
        self.randomBytes = randomBytes
        self.now = now
        self.currentDate = currentDate
        self.reportError = reportError
    }

    /// Random bytes from BoringSSL's CSPRNG (seeded by the operating system) through swift-crypto: one call
    /// per request rather than a system call per byte.
    public static let systemRandomBytes: @Sendable (Int) -> [UInt8] = { count in
        guard count > 0 else { return [] }
        return SymmetricKey(size: SymmetricKeySize(bitCount: count * 8)).withUnsafeBytes { Array($0) }
    }
}

/// What the authenticator is doing, for transports that report progress (CTAPHID KEEPALIVE).
public enum AuthenticatorActivity: Hashable, Sendable {
    case processing
    case waitingForUser
}

/// A CTAP 2.1 authenticator for ES256 and EdDSA passkeys: CBOR request in, status byte and CBOR out.
///
/// All effects come from `AuthenticatorEnvironment`, so the same core serves CTAPHID, hybrid and
/// tests. Requests are handled one at a time: one that arrives while another waits for the user is
/// answered CTAP1_ERR_CHANNEL_BUSY.
///
/// A class with its state under a mutex rather than an actor: the store and the user interaction are
/// called without hopping between executors, which keeps getAssertion close to the cost of its signature.
///
/// This file holds the type, its state and the dispatch of commands; the larger commands are extensions in files of
/// their own (`MakeCredential.swift`, `GetAssertion.swift`, `ClientPIN.swift`, `CredentialManagement.swift`,
/// `LargeBlobs.swift`, `AuthenticatorConfig.swift`).
public final class Authenticator: Sendable {
    public let configuration: AuthenticatorConfiguration
    let environment: AuthenticatorEnvironment
    private let startedAt: ContinuousClock.Instant
    let state: Mutex<State>

    /// What lasts one power cycle (one run of the process).
    struct State {
        var pendingAssertions: PendingAssertions?
        var busy = false
        /// The PIN/UV auth protocols' key agreement key; replaced after a wrong PIN (`regenerate()`).
        var keyAgreementKey: P256.KeyAgreement.PrivateKey
        /// The one pinUvAuthToken.
        var pinToken: PinUvAuthTokenState
        /// Wrong PINs since the last correct one in this power cycle; at 3, PIN use waits for a restart.
        var consecutivePINFailures = 0
        /// What credential management's GetNext subcommands return next.
        var pendingEnumeration: PendingEnumeration?
        /// A large-blob array being written in fragments.
        var largeBlobWrite: PendingLargeBlobWrite?
        /// The PIN/UV settings as last read from or written to the store. This authenticator must be their only
        /// writer (the `passkey` commands that serve take an exclusive lock on the store file for that), so after
        /// the first read every request uses this copy instead of a store call.
        var settings: AuthenticatorSettings?
        /// Built-in user verifications since the PIN was last entered correctly, in this power cycle (getInfo
        /// uvCountSinceLastPinEntry, CTAP 2.2).
        var verificationsSincePINEntry = 0
    }

    /// State kept between getAssertion and getNextAssertion.
    struct PendingAssertions {
        var remaining: [StoredCredential]
        var clientDataHash: [UInt8]
        var flags: AuthenticatorFlags
        var userVerified: Bool
        var issuedAt: ContinuousClock.Instant
        var extensions: GetAssertionExtensions
        var hmacSecret: HMACSecretSession?
    }

    public init(
        configuration: AuthenticatorConfiguration = AuthenticatorConfiguration(), environment: AuthenticatorEnvironment
    ) {
        self.configuration = configuration
        self.environment = environment
        self.startedAt = environment.now()
        self.state = Mutex(
            State(
                keyAgreementKey: Self.keyAgreementKey(environment.randomBytes),
                pinToken: PinUvAuthTokenState(token: environment.randomBytes(32))
            ))
    }

    /// Handles one CTAP2 message: the command byte followed by its CBOR parameters.
    /// Returns the status byte, followed by the CBOR response on success.
    public func handle(
        _ message: [UInt8],
        activity: @escaping @Sendable (AuthenticatorActivity) -> Void = { _ in }
    ) async -> [UInt8] {
        do throws(CTAPError) {
            let claimed = state.withLock { state in
                defer { state.busy = true }
                return !state.busy
            }
            guard claimed else { throw CTAPError.channelBusy }
            defer { state.withLock { $0.busy = false } }
            return try await perform(message, activity: activity)
        } catch {
            return [error.rawValue]
        }
    }

    private func perform(
        _ message: [UInt8],
        activity: @Sendable (AuthenticatorActivity) -> Void
    ) async throws(CTAPError) -> [UInt8] {
        guard let commandByte = message.first else { throw .invalidLength }
        guard message.count <= configuration.maximumMessageSize else { throw .invalidLength }
        let command = CTAPCommand(rawValue: commandByte)
        state.withLock { state in
            if command != .getNextAssertion { state.pendingAssertions = nil }
            if command != .credentialManagement && command != .credentialManagementPreview {
                state.pendingEnumeration = nil
            }
        }
        let parameters: CBORValue? = try Self.decodeParameters(message.dropFirst())

        switch command {
        case .getInfo:
            return Self.success(try await info())
        case .makeCredential:
            guard let parameters else { throw .missingParameter }
            return Self.success(try await makeCredential(MakeCredentialRequest(cbor: parameters), activity: activity))
        case .getAssertion:
            guard let parameters else { throw .missingParameter }
            return try await getAssertion(GetAssertionRequest(cbor: parameters), activity: activity)
        case .getNextAssertion:
            return try getNextAssertion()
        case .clientPIN:
            guard let parameters else { throw .missingParameter }
            return Self.success(try await clientPIN(ClientPINRequest(cbor: parameters), activity: activity))
        case .credentialManagement, .credentialManagementPreview:
            // The prototype command 0x41 takes the same parameters and pinUvAuthParam (subCommand ‖ subCommandParams),
            // so Debian 12's libfido2 (1.12, `ssh-keygen -K`) can manage credentials. getInfo does not advertise it.
            guard let parameters else { throw .missingParameter }
            return Self.success(try await credentialManagement(SubcommandRequest(cbor: parameters)))
        case .largeBlobs:
            guard let parameters else { throw .missingParameter }
            return Self.success(try await largeBlobs(LargeBlobsRequest(cbor: parameters)))
        case .config:
            guard let parameters else { throw .missingParameter }
            return Self.success(try await authenticatorConfig(SubcommandRequest(cbor: parameters)))
        case .reset:
            try await reset(activity: activity)
            return Self.success(nil)
        case .selection:
            try await ask(
                ConsentRequest(action: .selection, requiresPresence: true, requiresVerification: false), activity)
            return Self.success(nil)
        default:
            throw .invalidCommand
        }
    }

    /// A success response: status 0x00, then the body when there is one.
    static func success(_ body: CBORValue?) -> [UInt8] {
        var writer = CBORWriter(prefix: [0x00], capacity: 256)
        if let body { writer.value(body) }
        return writer.bytes
    }

    /// A request's parameters. Map keys in another order and integers wider than needed are read, as security keys
    /// read them: Firefox's authenticator-rs sends getAssertion's options as `{"uv": true, "up": true}`, uv first,
    /// whenever it asks a key for built-in user verification without a token (seen with `serve --phone`, issue 25).
    /// Everything else CTAP2's canonical form forbids is still refused with INVALID_CBOR: duplicate keys,
    /// indefinite lengths, tags, invalid UTF-8, trailing bytes.
    private static func decodeParameters(_ bytes: ArraySlice<UInt8>) throws(CTAPError) -> CBORValue? {
        guard !bytes.isEmpty else { return nil }
        do {
            return try CBORDecoder(requiresCanonicalForm: false).decode(bytes)
        } catch {
            throw CTAPError(error)
        }
    }

    // MARK: authenticatorGetInfo

    /// The authenticatorGetInfo response (CTAP 2.1 §6.4, with the CTAP 2.2 fields that have an honest answer): only
    /// what is implemented.
    public func info() async throws(CTAPError) -> CBORValue {
        let settings = try await loadSettings()
        let options = CBORValue.map(
            Dictionary(
                uniqueKeysWithValues: configuration.getInfoOptions(settings).map { (.text($0.id), .bool($0.value)) }))
        if configuration.oneRequestPerSession {
            return [
                1: ["FIDO_2_0", "FIDO_2_1"],
                2: ["credProtect", "credBlob", "minPinLength"],
                3: .bytes(configuration.aaguid.bytes),
                4: options,
                5: .int(configuration.maximumMessageSize),
                7: .int(configuration.maximumCredentialCountInList),
                8: .int(configuration.maximumCredentialIDLength),
                9: .array(configuration.transports.map(CBORValue.text)),
                10: Self.algorithmsInfo(configuration.algorithms),
                0x0E: .int(configuration.firmwareVersion),
                0x0F: .int(AuthenticatorExtension.maximumCredentialBlobLength),
                0x16: [.text(configuration.attestationFormat.rawValue)],
            ]
        }
        var info: [CBORValue: CBORValue] = [
            1: ["FIDO_2_0", "FIDO_2_1"],
            3: .bytes(configuration.aaguid.bytes),
            4: options,
            5: .int(configuration.maximumMessageSize),
            2: .array(AuthenticatorExtension.all.map(CBORValue.text)),
            6: .array(PinUvAuthProtocol.supported.map { .int($0.rawValue) }),
            7: .int(configuration.maximumCredentialCountInList),
            8: .int(configuration.maximumCredentialIDLength),
            9: .array(configuration.transports.map(CBORValue.text)),
            10: Self.algorithmsInfo(configuration.algorithms),
            0x0B: .int(configuration.maximumLargeBlobArrayLength),
            0x0C: .bool(settings.forcePINChange),
            0x0D: .int(settings.minimumPINLength),
            0x0E: .int(configuration.firmwareVersion),
            0x0F: .int(AuthenticatorExtension.maximumCredentialBlobLength),
            0x10: .int(Self.maximumMinPINLengthRelyingParties),
            // CTAP 2.2's fields that have an honest answer here (Docs/CTAP.md): the one attestation format made,
            // reset allowed over every transport, no PIN complexity policy beyond the minimum length, PINs up to 63
            // bytes, and the authenticatorConfig subcommands implemented (toggleAlwaysUv, setMinPINLength).
            0x16: [.text(configuration.attestationFormat.rawValue)],
            0x1A: .array(configuration.transports.map(CBORValue.text)),
            0x1B: false,
            0x1D: .int(Self.maximumPINLength),
            0x1F: [.int(ConfigSubcommand.toggleAlwaysUv.rawValue), .int(ConfigSubcommand.setMinPINLength.rawValue)],
        ]
        // With built-in verification: how often it was used since the PIN was last entered, so a platform can ask
        // for the PIN now and then.
        if configuration.userVerification.hasBuiltInVerification {
            info[0x17] = .int(state.withLock { $0.verificationsSincePINEntry })
        }
        info.merge(try await encryptedInfoFields(settings)) { $1 }
        return .map(info)
    }

    // MARK: authenticatorReset

    private func reset(activity: @Sendable (AuthenticatorActivity) -> Void) async throws(CTAPError) {
        guard environment.now() - startedAt <= configuration.resetWindow else { throw .notAllowed }
        let count = try await storeCall { try await $0.allCredentials() }.count
        try await ask(
            ConsentRequest(action: .reset(passkeyCount: count), requiresPresence: true, requiresVerification: false),
            activity
        )
        try await storeCall { try await $0.deleteAll() }
        revokeToken()
        state.withLock {
            $0.settings = nil
            $0.consecutivePINFailures = 0
            $0.largeBlobWrite = nil
        }
    }

    // MARK: Shared steps

    /// The `uv` option of makeCredential and getAssertion: without built-in user verification, `uv: true` without a
    /// pinUvAuthParam is CTAP2_ERR_INVALID_OPTION (CTAP 2.1 §6.1.2 step 5, §6.2.2 step 4); with a pinUvAuthParam it
    /// is treated as false.
    func checkUVOption(_ uv: Bool?, pinUvAuth: PinUvAuthParameters?) throws(CTAPError) {
        guard uv == true, pinUvAuth == nil, !configuration.userVerification.hasBuiltInVerification else { return }
        throw .invalidOption
    }

    /// Asks the user; any answer but approval ends the command with its status code.
    @discardableResult
    func ask(
        _ request: ConsentRequest,
        _ activity: @Sendable (AuthenticatorActivity) -> Void
    ) async throws(CTAPError) -> (userVerified: Bool, selectedAccount: Int?) {
        activity(.waitingForUser)
        defer { activity(.processing) }
        switch await environment.userInteraction.requestConsent(request) {
        case .approved(let userVerified, let selectedAccount):
            return (userVerified && request.requiresVerification, selectedAccount)
        case .denied: throw .operationDenied
        case .verificationFailed: throw .userVerificationInvalid
        case .timedOut: throw .userActionTimeout
        case .cancelled: throw .keepaliveCancel
        }
    }

    static func backupFlags(_ credential: StoredCredential) -> AuthenticatorFlags {
        var flags: AuthenticatorFlags = []
        if credential.backupEligible { flags.insert(.backupEligible) }
        if credential.backupEligible && credential.backupState { flags.insert(.backupState) }
        return flags
    }

    /// Signs `authenticatorData ‖ clientDataHash` with `key` (``CredentialPrivateKey/signature(_:_:)``).
    static func sign(
        _ authenticatorData: [UInt8], _ clientDataHash: [UInt8], with key: CredentialPrivateKey
    ) throws(CTAPError) -> [UInt8] {
        do {
            return try key.signature(authenticatorData, clientDataHash)
        } catch {
            throw .other
        }
    }

    /// getInfo's algorithms (0x0A): each as `{"alg": …, "type": "public-key"}`.
    static func algorithmsInfo(_ algorithms: [COSEAlgorithm]) -> CBORValue {
        .array(algorithms.map { ["alg": .int($0.rawValue), "type": "public-key"] })
    }

    /// Runs a store operation; a full store is CTAP2_ERR_KEY_STORE_FULL and any other failure
    /// CTAP1_ERR_OTHER, reported to the operator.
    func storeCall<T>(_ body: (any CredentialStore) async throws -> T) async throws(CTAPError) -> T {
        do {
            return try await body(environment.store)
        } catch let error as CredentialStoreError where error.code == .full {
            throw .keyStoreFull
        } catch {
            environment.reportError(error)
            throw .other
        }
    }
}
