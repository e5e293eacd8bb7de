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

/// A CTAP 2.1 authenticator for ES256 passkeys: CBOR request in, status byte and CBOR out.
///
/// All effects come from `AuthenticatorEnvironment`, so the same core serves CTAPHID, hybrid and
/// tests. Requests are handled one at a time: one that arrives while another waits for the user is
/// answered CTAP1_ERR_CHANNEL_BUSY.
///
/// A class with its state under a mutex rather than an actor: the store and the user interaction are
/// called without hopping between executors, which keeps getAssertion close to the cost of its signature.
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

    private static func decodeParameters(_ bytes: ArraySlice<UInt8>) throws(CTAPError) -> CBORValue? {
        guard !bytes.isEmpty else { return nil }
        do {
            return try CBORDecoder().decode(bytes)
        } catch {
            throw CTAPError(error)
        }
    }

    // MARK: authenticatorGetInfo

    /// The authenticatorGetInfo response (CTAP 2.1 §6.4): only what is implemented.
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
                10: [["alg": .int(COSEAlgorithm.es256.rawValue), "type": "public-key"]],
                0x0E: .int(configuration.firmwareVersion),
                0x0F: .int(AuthenticatorExtension.maximumCredentialBlobLength),
            ]
        }
        return [
            1: ["FIDO_2_0", "FIDO_2_1"],
            3: .bytes(configuration.aaguid.bytes),
            4: options,
            5: .int(configuration.maximumMessageSize),
            2: .array(AuthenticatorExtension.all.map(CBORValue.text)),
            6: .array(PinUvAuthProtocol.supported.map { .int($0.rawValue) }),
            7: .int(configuration.maximumCredentialCountInList),
            8: .int(configuration.maximumCredentialIDLength),
            9: .array(configuration.transports.map(CBORValue.text)),
            10: [["alg": .int(COSEAlgorithm.es256.rawValue), "type": "public-key"]],
            0x0B: .int(configuration.maximumLargeBlobArrayLength),
            0x0C: .bool(settings.forcePINChange),
            0x0D: .int(settings.minimumPINLength),
            0x0E: .int(configuration.firmwareVersion),
            0x0F: .int(AuthenticatorExtension.maximumCredentialBlobLength),
            0x10: .int(Self.maximumMinPINLengthRelyingParties),
        ]
    }

    // MARK: authenticatorMakeCredential

    private func makeCredential(
        _ request: MakeCredentialRequest,
        activity: @Sendable (AuthenticatorActivity) -> Void
    ) async throws(CTAPError) -> CBORValue {
        guard request.clientDataHash.count == 32 else { throw .invalidLength }
        guard request.userHandle.count <= 64, !request.userHandle.isEmpty else { throw .invalidLength }
        let pinUvAuth = try await pinUvAuthParameters(
            request.pinUvAuthParam, protocol: request.pinUvAuthProtocol, activity: activity)
        guard request.algorithms.contains(COSEAlgorithm.es256.rawValue) else { throw .unsupportedAlgorithm }
        let extensions = try MakeCredentialExtensions(cbor: request.extensions)
        guard request.excludeList.count <= configuration.maximumCredentialCountInList else { throw .limitExceeded }
        // Enterprise attestation is not supported (CTAP 2.1 §6.1.2 step 9).
        guard request.enterpriseAttestation == nil else { throw .invalidParameter }

        let discoverable = request.options["rk"] ?? false
        guard request.options["up"] != false else { throw .invalidOption }
        try checkUVOption(request.options["uv"], pinUvAuth: pinUvAuth)
        let settings = try await loadSettings()
        // A pinUvAuthToken proves verification and the uv option is then ignored (§6.1.2 step 6); without one, the
        // uv option (or alwaysUv) asks for built-in verification.
        var token: TokenAuthorization? = nil
        if let pinUvAuth {
            token = try authorizeToken(
                pinUvAuth, message: request.clientDataHash, permission: .makeCredential,
                relyingPartyID: request.relyingPartyID)
        }
        // A discoverable credential needs user verification (makeCredUvNotRqd covers non-discoverable ones only,
        // §6.1.2 step 7). Without a token or `uv` and with no PIN set, the built-in method verifies the user instead
        // of answering CTAP2_ERR_PUAT_REQUIRED, as alwaysUv does in step 6 (UserVerificationPolicy.whenRequested).
        // A key without built-in verification (pinOnly) is protected only once a PIN is set: before, a discoverable
        // credential is made with user presence alone.
        let everyRequest = configuration.verifiesEveryRequest(settings)
        let builtInVerification =
            configuration.userVerification.hasBuiltInVerification && token == nil
            && (request.options["uv"] == true || everyRequest || (discoverable && !settings.isPINSet))
        // What needs verification and gets none from the built-in method needs a token: the platform collects the
        // PIN and comes back with one (step 7 with a PIN set; step 6 for alwaysUv on a key without built-in
        // verification, PIN or not, since clientPin is supported).
        if token == nil && !builtInVerification
            && ((discoverable && settings.isPINSet) || everyRequest)
        {
            throw .pinUvAuthTokenRequired
        }

        for descriptor in request.excludeList where descriptor.type == "public-key" {
            guard let existing = try await storeCall({ try await $0.credential(id: descriptor.id) }),
                existing.relyingPartyID == request.relyingPartyID
            else { continue }
            // credProtect level 3 hides a credential from requests without user verification (§12.1).
            if existing.credentialProtection == .userVerificationRequired && token == nil && !builtInVerification {
                continue
            }
            // The user's presence is collected first, so a site cannot silently probe for credentials.
            _ = try? await ask(
                ConsentRequest(
                    action: .credentialExcluded(relyingPartyID: request.relyingPartyID),
                    requiresPresence: true,
                    requiresVerification: false
                ),
                activity
            )
            throw .credentialExcluded
        }

        var userVerified = token != nil
        if token?.userPresent != true || builtInVerification {
            let approval = try await consent(
                ConsentRequest(
                    action: .makeCredential(
                        relyingPartyID: request.relyingPartyID,
                        userName: request.userName,
                        userDisplayName: request.userDisplayName
                    ),
                    requiresPresence: true,
                    requiresVerification: builtInVerification
                ),
                activity
            )
            if builtInVerification { userVerified = approval.userVerified }
        }
        if token != nil { state.withLock { $0.pinToken.consumeAfterUse() } }

        let privateKey = generatePrivateKey()
        var credential = StoredCredential(
            id: environment.randomBytes(
                min(max(16, configuration.credentialIDLength), configuration.maximumCredentialIDLength)),
            relyingPartyID: request.relyingPartyID,
            relyingPartyName: Self.truncated(request.relyingPartyName),
            userHandle: request.userHandle,
            userName: Self.truncated(request.userName),
            userDisplayName: Self.truncated(request.userDisplayName),
            privateKey: privateKey,
            isDiscoverable: discoverable,
            backupEligible: configuration.backupEligible,
            backupState: configuration.backupState,
            creationDate: environment.currentDate()
        )
        let extensionOutputs = applyExtensions(extensions, to: &credential, settings: settings)
        try await storeCall { [credential] in try await $0.save(credential) }

        var flags: AuthenticatorFlags = [.userPresent]
        if userVerified { flags.insert(.userVerified) }
        flags.formUnion(Self.backupFlags(credential))
        let authenticatorData = AuthenticatorData(
            relyingPartyIDHash: SHA256.hash(data: Array(request.relyingPartyID.utf8)).bytes,
            flags: flags,
            signCount: 0,
            attestedCredentialData: AttestedCredentialData(
                aaguid: configuration.aaguid,
                credentialID: credential.id,
                publicKey: COSEKey(publicKey: privateKey.publicKey)
            ),
            extensions: extensionOutputs
        )
        let statement: CBORValue
        switch configuration.attestationFormat {
        case .none:
            statement = [:]
        case .packedSelf:
            let signature = try Self.sign(authenticatorData.bytes, request.clientDataHash, with: privateKey)
            statement = ["alg": .int(COSEAlgorithm.es256.rawValue), "sig": .bytes(signature)]
        }
        var response: [CBORValue: CBORValue] = [
            1: .text(configuration.attestationFormat.rawValue),
            2: .bytes(authenticatorData.bytes),
            3: statement,
        ]
        if credential.largeBlobKey { response[5] = .bytes(Self.derivedSecret(credential, label: "largeBlobKey")) }
        return .map(response)
    }

    /// The longest rp.name, user.name and user.displayName kept, in UTF-8 bytes. CTAP 2.1 (§6.1.2, the
    /// PublicKeyCredentialUserEntity and PublicKeyCredentialRpEntity notes) lets an authenticator truncate them to
    /// 64 bytes; longer ones could make a later getAssertion response pass the CTAPHID message limit.
    static let maximumNameBytes = 64

    /// `text` cut to at most `maximumNameBytes` of UTF-8 at a character boundary.
    static func truncated(_ text: String?) -> String? {
        guard let text, text.utf8.count > maximumNameBytes else { return text }
        var result = ""
        var count = 0
        for character in text {
            count += character.utf8.count
            guard count <= maximumNameBytes else { break }
            result.append(character)
        }
        return result
    }

    /// A fresh P-256 key from injected randomness. Importing a random scalar skips the FIPS
    /// pairwise self-test and compact-form retries of swift-crypto's generator (see Tools/bench).
    private func generatePrivateKey() -> P256.Signing.PrivateKey {
        while true {
            if let key = try? P256.Signing.PrivateKey(rawRepresentation: environment.randomBytes(32)) { return key }
        }
    }

    // MARK: authenticatorGetAssertion

    private func getAssertion(
        _ request: GetAssertionRequest,
        activity: @Sendable (AuthenticatorActivity) -> Void
    ) async throws(CTAPError) -> [UInt8] {
        guard request.clientDataHash.count == 32 else { throw .invalidLength }
        let pinUvAuth = try await pinUvAuthParameters(
            request.pinUvAuthParam, protocol: request.pinUvAuthProtocol, activity: activity)
        try checkUVOption(request.options["uv"], pinUvAuth: pinUvAuth)
        guard request.options["rk"] == nil else { throw .unsupportedOption }
        let extensions = try GetAssertionExtensions(cbor: request.extensions)
        guard request.allowList.count <= configuration.maximumCredentialCountInList else { throw .limitExceeded }
        let presenceRequested = request.options["up"] ?? true
        let settings = try await loadSettings()
        var token: TokenAuthorization? = nil
        if let pinUvAuth {
            token = try authorizeToken(
                pinUvAuth, message: request.clientDataHash, permission: .getAssertion,
                relyingPartyID: request.relyingPartyID)
        }
        let builtIn = configuration.userVerification.hasBuiltInVerification
        let everyRequest = configuration.verifiesEveryRequest(settings)
        let verificationRequested = builtIn && token == nil && (request.options["uv"] == true || everyRequest)
        // alwaysUv without built-in verification: a request with user presence needs a token, PIN set or not, since
        // clientPin is supported (§6.2.2 step 5). A silent one (up false) goes on without verification.
        if !builtIn && token == nil && presenceRequested && everyRequest {
            throw .pinUvAuthTokenRequired
        }
        let willVerify = token != nil || verificationRequested

        var candidates: [StoredCredential] = []
        if request.allowList.isEmpty {
            // credProtect (§12.1): without user verification, discovery finds level 1 credentials only.
            candidates = try await storeCall { try await $0.credentials(forRelyingParty: request.relyingPartyID) }
                .filter { $0.isDiscoverable && ($0.credentialProtection == .userVerificationOptional || willVerify) }
        } else {
            for descriptor in request.allowList where descriptor.type == "public-key" {
                if let credential = try await storeCall({ try await $0.credential(id: descriptor.id) }),
                    credential.relyingPartyID == request.relyingPartyID,
                    credential.credentialProtection != .userVerificationRequired || willVerify
                {
                    candidates = [credential]
                    break
                }
            }
        }
        guard !candidates.isEmpty else { throw .noCredentials }
        let hmacSecret = try extensions.hmacSecret.map { (input) throws(CTAPError) in try hmacSecretSession(input) }

        let chooseOnAuthenticator =
            configuration.accountSelection == .authenticator && request.allowList.isEmpty && candidates.count > 1
        var userVerified = token != nil
        var userSelected = false
        let presenceProven = token?.userPresent == true && !chooseOnAuthenticator
        if (presenceRequested && !presenceProven) || verificationRequested {
            let approval = try await consent(
                ConsentRequest(
                    action: .getAssertion(
                        relyingPartyID: request.relyingPartyID,
                        accounts: candidates.map(AccountSummary.init),
                        chooseOnAuthenticator: chooseOnAuthenticator
                    ),
                    requiresPresence: presenceRequested,
                    requiresVerification: verificationRequested
                ),
                activity
            )
            if verificationRequested { userVerified = approval.userVerified }
            if chooseOnAuthenticator, let index = approval.selectedAccount, candidates.indices.contains(index) {
                candidates = [candidates[index]]
                userSelected = true
            }
        }

        if token != nil && presenceRequested { state.withLock { $0.pinToken.consumeAfterUse() } }

        var flags: AuthenticatorFlags = []
        if presenceRequested { flags.insert(.userPresent) }
        if userVerified { flags.insert(.userVerified) }
        let first = candidates.removeFirst()
        let pagesRemaining = !candidates.isEmpty && !chooseOnAuthenticator
        if pagesRemaining {
            let pending = PendingAssertions(
                remaining: candidates,
                clientDataHash: request.clientDataHash,
                flags: flags,
                userVerified: userVerified,
                issuedAt: environment.now(),
                extensions: extensions,
                hmacSecret: hmacSecret
            )
            state.withLock { $0.pendingAssertions = pending }
        }
        let outputs = try Self.extensionOutputs(
            for: first, requested: extensions, hmacSecret: hmacSecret, userVerified: userVerified)
        return try assertion(
            for: first, clientDataHash: request.clientDataHash, flags: flags, userVerified: userVerified,
            extensions: outputs, numberOfCredentials: pagesRemaining ? candidates.count + 1 : nil,
            userSelected: userSelected)
    }

    private func getNextAssertion() throws(CTAPError) -> [UInt8] {
        let now = environment.now()
        let next = state.withLock { state -> (StoredCredential, PendingAssertions)? in
            guard var pending = state.pendingAssertions, !pending.remaining.isEmpty,
                now - pending.issuedAt <= configuration.nextAssertionTimeout
            else {
                state.pendingAssertions = nil
                return nil
            }
            let credential = pending.remaining.removeFirst()
            state.pendingAssertions = pending.remaining.isEmpty ? nil : pending
            return (credential, pending)
        }
        guard let (credential, pending) = next else { throw .notAllowed }
        var hmacSecret = pending.hmacSecret
        hmacSecret?.iv = environment.randomBytes(16)
        let outputs = try Self.extensionOutputs(
            for: credential, requested: pending.extensions, hmacSecret: hmacSecret, userVerified: pending.userVerified)
        return try assertion(
            for: credential, clientDataHash: pending.clientDataHash, flags: pending.flags,
            userVerified: pending.userVerified, extensions: outputs)
    }

    /// One whole assertion response (status byte and CBOR): credential, authenticator data, signature,
    /// for discoverable credentials the user (names only after user verification, CTAP 2.1 §6.2.2), then
    /// numberOfCredentials and userSelected when given. Written directly with keys in canonical order,
    /// since this is the signing hot path.
    private func assertion(
        for credential: StoredCredential,
        clientDataHash: [UInt8],
        flags: AuthenticatorFlags,
        userVerified: Bool,
        extensions: AssertionExtensionOutputs,
        numberOfCredentials: Int? = nil,
        userSelected: Bool = false
    ) throws(CTAPError) -> [UInt8] {
        let authenticatorData = AuthenticatorData(
            relyingPartyIDHash: SHA256.hash(data: Array(credential.relyingPartyID.utf8)).bytes,
            flags: flags.union(Self.backupFlags(credential)),
            signCount: 0,
            extensions: extensions.authenticatorData
        )
        let signature = try Self.sign(authenticatorData.bytes, clientDataHash, with: credential.privateKey)
        let name = userVerified ? credential.userName : nil
        let displayName = userVerified ? credential.userDisplayName : nil

        var writer = CBORWriter(prefix: [0x00], capacity: 256)
        var entries = 3
        if credential.isDiscoverable { entries += 1 }
        if numberOfCredentials != nil { entries += 1 }
        if userSelected { entries += 1 }
        if extensions.largeBlobKey != nil { entries += 1 }
        writer.mapHeader(count: entries)
        writer.int(1)  // credential: {"id", "type"}
        writer.mapHeader(count: 2)
        writer.text("id")
        writer.byteString(credential.id)
        writer.text("type")
        writer.text("public-key")
        writer.int(2)
        writer.byteString(authenticatorData.bytes)
        writer.int(3)
        writer.byteString(signature)
        if credential.isDiscoverable {
            writer.int(4)  // user: {"id", "name", "displayName"}
            writer.mapHeader(count: 1 + (name == nil ? 0 : 1) + (displayName == nil ? 0 : 1))
            writer.text("id")
            writer.byteString(credential.userHandle)
            if let name {
                writer.text("name")
                writer.text(name)
            }
            if let displayName {
                writer.text("displayName")
                writer.text(displayName)
            }
        }
        if let numberOfCredentials {
            writer.int(5)
            writer.int(numberOfCredentials)
        }
        if userSelected {
            writer.int(6)
            writer.bool(true)
        }
        if let largeBlobKey = extensions.largeBlobKey {
            writer.int(7)
            writer.byteString(largeBlobKey)
        }
        return writer.bytes
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
    private func checkUVOption(_ uv: Bool?, pinUvAuth: PinUvAuthParameters?) throws(CTAPError) {
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

    /// Signs `authenticatorData ‖ clientDataHash` (hashed in two updates, without joining them) and returns DER.
    private static func sign(
        _ authenticatorData: [UInt8], _ clientDataHash: [UInt8], with key: P256.Signing.PrivateKey
    ) throws(CTAPError) -> [UInt8] {
        var hasher = SHA256()
        hasher.update(data: authenticatorData)
        hasher.update(data: clientDataHash)
        do {
            return ECDSASignatureDER.encode(raw: Array(try key.signature(for: hasher.finalize()).rawRepresentation))
        } catch {
            throw .other
        }
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
