import Basics
import CBOR
import Crypto
import Foundation
import Synchronization

/// A pinUvAuthParam with its protocol, checked for presence and support but not yet verified.
struct PinUvAuthParameters {
    var param: [UInt8]
    var pinUvAuthProtocol: PinUvAuthProtocol
}

/// What a verified pinUvAuthParam proved.
struct TokenAuthorization {
    /// The token's user-present flag: the user acted at the authenticator when it was issued.
    var userPresent: Bool
}

extension Authenticator {
    /// Wrong PINs in a row, in one power cycle, after which PIN use waits for a restart (CTAP 2.1 §6.5.5.5).
    static let consecutivePINFailureLimit = 3
    /// The permissions a token can be issued with: those whose commands are implemented.
    static let supportedPermissions: PinUvAuthPermissions = [
        .makeCredential, .getAssertion, .credentialManagement, .largeBlobWrite, .authenticatorConfiguration,
        .persistentCredentialManagementReadOnly,
    ]

    // MARK: authenticatorClientPIN

    /// authenticatorClientPIN (CTAP 2.1 §6.5.5). Errors follow the steps of each subcommand; a request refused
    /// before the PIN is compared changes nothing.
    func clientPIN(
        _ request: ClientPINRequest, activity: @Sendable (AuthenticatorActivity) -> Void
    ) async throws(CTAPError) -> CBORValue? {
        guard let subcommand = ClientPINRequest.Subcommand(rawValue: request.subcommand) else {
            throw .invalidSubcommand
        }
        switch subcommand {
        case .getPINRetries:
            let settings = try await loadSettings()
            let blocked = state.withLock { $0.consecutivePINFailures >= Self.consecutivePINFailureLimit }
            return [3: .int(settings.pinRetries), 4: .bool(blocked)]
        case .getUVRetries:
            try checkBuiltInVerificationExists()
            return [5: .int(try await loadSettings().uvRetries)]
        case .getKeyAgreement:
            guard let version = request.pinUvAuthProtocol else { throw .missingParameter }
            _ = try Self.supportedProtocol(version)
            return [1: PinUvAuthProtocol.coseKey(state.withLock { $0.keyAgreementKey.publicKey })]
        case .setPIN:
            try await setPIN(request, activity: activity)
            return nil
        case .changePIN:
            try await changePIN(request)
            return nil
        case .getPINToken, .getPinUvAuthTokenUsingPinWithPermissions:
            return try await pinToken(request, legacy: subcommand == .getPINToken)
        case .getPinUvAuthTokenUsingUvWithPermissions:
            try checkBuiltInVerificationExists()
            return try await uvToken(request, activity: activity)
        }
    }

    /// The built-in verification subcommands exist only with a built-in method: getInfo pinUvAuthToken offers
    /// getPinUvAuthTokenUsingUvWithPermissions only together with `uv` (CTAP 2.1 §6.4), so without it they are
    /// subcommands this authenticator does not support, CTAP2_ERR_INVALID_SUBCOMMAND, as OpenSK (PIN only) answers.
    private func checkBuiltInVerificationExists() throws(CTAPError) {
        guard configuration.userVerification.hasBuiltInVerification else { throw .invalidSubcommand }
    }

    /// setPIN (CTAP 2.1 §6.5.5), with one step the specification does not have: the user is asked, as for
    /// authenticatorReset, once the request is well formed and before the PIN is stored. Without it a program on
    /// this computer could set the first PIN itself and, knowing it, take a token with the cm, lbw or acfg
    /// permission: list and delete every discoverable credential, replace the large-blob array or change the
    /// configuration without anyone's click (CTRAPS, EuroS&P 2025; `Docs/SecurityKey.md`). Platforms see the
    /// request wait for the user as any other (CTAPHID KEEPALIVE with status UPNEEDED).
    private func setPIN(
        _ request: ClientPINRequest, activity: @Sendable (AuthenticatorActivity) -> Void
    ) async throws(CTAPError) {
        guard let version = request.pinUvAuthProtocol, let keyAgreement = request.keyAgreement,
            let param = request.pinUvAuthParam, let newPinEnc = request.newPinEnc
        else { throw .missingParameter }
        let pinProtocol = try Self.supportedProtocol(version)
        var settings = try await loadSettings()
        guard !settings.isPINSet else { throw .notAllowed }
        let shared = try sharedSecret(pinProtocol, keyAgreement)
        guard pinProtocol.verify(key: shared, message: newPinEnc, signature: param) else { throw .pinAuthInvalid }
        let newPIN = try Self.newPIN(newPinEnc, pinProtocol, shared, minimumLength: settings.minimumPINLength)
        try await ask(ConsentRequest(action: .setPIN, requiresPresence: true, requiresVerification: false), activity)
        settings.pinHash = newPIN.hash
        settings.pinCodePointCount = newPIN.codePoints
        settings.pinRetries = AuthenticatorSettings.maximumPINRetries
        settings.forcePINChange = false
        try await saveSettings(settings)
    }

    private func changePIN(_ request: ClientPINRequest) async throws(CTAPError) {
        guard let version = request.pinUvAuthProtocol, let keyAgreement = request.keyAgreement,
            let param = request.pinUvAuthParam, let newPinEnc = request.newPinEnc, let pinHashEnc = request.pinHashEnc
        else { throw .missingParameter }
        let pinProtocol = try Self.supportedProtocol(version)
        var settings = try await loadSettings()
        try checkPINUsable(settings)
        let shared = try sharedSecret(pinProtocol, keyAgreement)
        guard pinProtocol.verify(key: shared, message: newPinEnc + pinHashEnc, signature: param) else {
            throw .pinAuthInvalid
        }
        try await checkPIN(pinHashEnc, pinProtocol, shared, settings: &settings)
        let newPIN = try Self.newPIN(newPinEnc, pinProtocol, shared, minimumLength: settings.minimumPINLength)
        if settings.forcePINChange, let current = settings.pinHash, constantTimeEqual(current, newPIN.hash) {
            throw .pinPolicyViolation
        }
        settings.pinHash = newPIN.hash
        settings.pinCodePointCount = newPIN.codePoints
        settings.forcePINChange = false
        try await saveSettings(settings)
        revokeToken()
    }

    /// getPinToken (legacy: permissions mc and ga, no RP ID) and getPinUvAuthTokenUsingPinWithPermissions.
    private func pinToken(_ request: ClientPINRequest, legacy: Bool) async throws(CTAPError) -> CBORValue {
        guard let version = request.pinUvAuthProtocol, let keyAgreement = request.keyAgreement,
            let pinHashEnc = request.pinHashEnc
        else { throw .missingParameter }
        let permissions: PinUvAuthPermissions
        if legacy {
            guard request.permissions == nil, request.relyingPartyID == nil else { throw .invalidParameter }
            permissions = [.makeCredential, .getAssertion]
        } else {
            guard let raw = request.permissions else { throw .missingParameter }
            permissions = try Self.requestedPermissions(raw)
        }
        let pinProtocol = try Self.supportedProtocol(version)
        if !legacy { try Self.checkSupported(permissions) }
        var settings = try await loadSettings()
        try checkPINUsable(settings)
        let shared = try sharedSecret(pinProtocol, keyAgreement)
        try await checkPIN(pinHashEnc, pinProtocol, shared, settings: &settings)
        guard !settings.forcePINChange else { throw .pinPolicyViolation }
        if permissions == .persistentCredentialManagementReadOnly {
            return try await issuePersistentToken(pinProtocol, shared: shared)
        }
        return try issueToken(
            pinProtocol, shared: shared, permissions: permissions, relyingPartyID: request.relyingPartyID,
            userPresent: false)
    }

    /// getPinUvAuthTokenUsingUvWithPermissions: built-in user verification (the store passphrase) instead of a PIN.
    private func uvToken(
        _ request: ClientPINRequest, activity: @Sendable (AuthenticatorActivity) -> Void
    ) async throws(CTAPError) -> CBORValue {
        guard let version = request.pinUvAuthProtocol, let keyAgreement = request.keyAgreement,
            let raw = request.permissions
        else { throw .missingParameter }
        let permissions = try Self.requestedPermissions(raw)
        let pinProtocol = try Self.supportedProtocol(version)
        try Self.checkSupported(permissions)
        try Self.checkBuiltInVerificationUsable(try await loadSettings())
        let shared = try sharedSecret(pinProtocol, keyAgreement)
        try await consent(
            ConsentRequest(
                action: .verifyUser(relyingPartyID: request.relyingPartyID), requiresPresence: true,
                requiresVerification: true),
            activity)
        if permissions == .persistentCredentialManagementReadOnly {
            return try await issuePersistentToken(pinProtocol, shared: shared)
        }
        return try issueToken(
            pinProtocol, shared: shared, permissions: permissions, relyingPartyID: request.relyingPartyID,
            userPresent: true)
    }

    // MARK: PIN checks

    /// PIN_NOT_SET, PIN_BLOCKED or PIN_AUTH_BLOCKED before anything is compared.
    private func checkPINUsable(_ settings: AuthenticatorSettings) throws(CTAPError) {
        guard settings.isPINSet else { throw .pinNotSet }
        guard settings.pinRetries > 0 else { throw .pinBlocked }
        let blocked = state.withLock { $0.consecutivePINFailures >= Self.consecutivePINFailureLimit }
        guard !blocked else { throw .pinAuthBlocked }
    }

    /// Compares `pinHashEnc` with the stored PIN hash (CTAP 2.1 §6.5.5.5 steps 6–9). The retry counter is lowered
    /// and saved before the comparison, so cutting the power cannot give a free guess; a correct PIN restores it
    /// and the UV retry counter.
    /// A wrong PIN replaces the key agreement key and is PIN_INVALID, or PIN_AUTH_BLOCKED at the third in a row,
    /// or PIN_BLOCKED when no retries are left.
    private func checkPIN(
        _ pinHashEnc: [UInt8], _ pinProtocol: PinUvAuthProtocol, _ shared: [UInt8],
        settings: inout AuthenticatorSettings
    ) async throws(CTAPError) {
        // A ciphertext that cannot hold a 16-byte hash is malformed, not a guess: refused before counting.
        guard pinHashEnc.count == 16 + pinProtocol.ivLength else { throw .pinAuthInvalid }
        settings.pinRetries -= 1
        try await saveSettings(settings)
        let candidate = (try? pinProtocol.decrypt(key: shared, ciphertext: pinHashEnc)) ?? []
        guard let stored = settings.pinHash, constantTimeEqual(candidate, stored) else {
            let failures = state.withLock { state in
                state.keyAgreementKey = Self.keyAgreementKey(environment.randomBytes)
                state.consecutivePINFailures += 1
                return state.consecutivePINFailures
            }
            if settings.pinRetries == 0 { throw .pinBlocked }
            if failures >= Self.consecutivePINFailureLimit { throw .pinAuthBlocked }
            throw .pinInvalid
        }
        state.withLock {
            $0.consecutivePINFailures = 0
            $0.verificationsSincePINEntry = 0
        }
        // A correct PIN also unblocks built-in user verification (CTAP 2.1 §6.5.5.7.2).
        settings.pinRetries = AuthenticatorSettings.maximumPINRetries
        settings.uvRetries = AuthenticatorSettings.maximumUVRetries
        try await saveSettings(settings)
    }

    /// The longest PIN, in bytes of UTF-8 (CTAP 2.1 §6.5.5.5: a 64-byte padded block with at least one zero);
    /// getInfo's maxPINLength.
    static let maximumPINLength = 63

    /// Decrypts and checks a new PIN block: 64 bytes, the PIN's UTF-8 then zeros, at most 63 bytes of PIN with
    /// no zero byte inside, and at least `minimumLength` code points.
    private static func newPIN(
        _ newPinEnc: [UInt8], _ pinProtocol: PinUvAuthProtocol, _ shared: [UInt8], minimumLength: Int
    ) throws(CTAPError) -> (hash: [UInt8], codePoints: Int) {
        let padded: [UInt8]
        do {
            padded = try pinProtocol.decrypt(key: shared, ciphertext: newPinEnc)
        } catch {
            throw .pinAuthInvalid
        }
        guard padded.count == 64 else { throw .invalidParameter }
        let length = (padded.lastIndex { $0 != 0 } ?? -1) + 1
        let pinBytes = Array(padded[..<length])
        guard length <= Self.maximumPINLength, !pinBytes.contains(0),
            let pin = String(validating: pinBytes, as: UTF8.self)
        else {
            throw .pinPolicyViolation
        }
        let codePoints = pin.unicodeScalars.count
        guard codePoints >= minimumLength else { throw .pinPolicyViolation }
        return (Array(SHA256.hash(data: pinBytes).bytes.prefix(16)), codePoints)
    }

    // MARK: Tokens

    /// Permissions as requested: zero is CTAP1_ERR_INVALID_PARAMETER.
    private static func requestedPermissions(_ raw: Int) throws(CTAPError) -> PinUvAuthPermissions {
        guard raw > 0, raw <= 0xFF else { throw .invalidParameter }
        return PinUvAuthPermissions(rawValue: raw)
    }

    /// A permission this authenticator cannot grant is CTAP2_ERR_UNAUTHORIZED_PERMISSION; so is pcmr with any other
    /// permission, since the persistent token is a separate, read-only token (and must not carry a write permission
    /// past a restart).
    private static func checkSupported(_ permissions: PinUvAuthPermissions) throws(CTAPError) {
        guard supportedPermissions.isSuperset(of: permissions) else { throw .unauthorizedPermission }
        if permissions.contains(.persistentCredentialManagementReadOnly),
            permissions != .persistentCredentialManagementReadOnly
        {
            throw .unauthorizedPermission
        }
    }

    private func issueToken(
        _ pinProtocol: PinUvAuthProtocol, shared: [UInt8], permissions: PinUvAuthPermissions,
        relyingPartyID: String?, userPresent: Bool
    ) throws(CTAPError) -> CBORValue {
        let token = environment.randomBytes(32)
        let iv = environment.randomBytes(16)
        let now = environment.now()
        state.withLock {
            $0.pinToken.issue(
                token: token, protocol: pinProtocol, permissions: permissions, relyingPartyID: relyingPartyID,
                userPresent: userPresent, now: now)
        }
        do {
            return [2: .bytes(try pinProtocol.encrypt(key: shared, plaintext: token, iv: iv))]
        } catch {
            throw .other
        }
    }

    /// stopUsingPinUvAuthToken: after a PIN change every token stops working.
    func revokeToken() {
        let fresh = environment.randomBytes(32)
        state.withLock { $0.pinToken.revoke(newToken: fresh) }
    }

    /// Steps 1–2 of makeCredential and getAssertion (CTAP 2.1 §6.1.2): a zero-length pinUvAuthParam asks the
    /// user to touch and then answers PIN_NOT_SET or PIN_INVALID (platforms use it to pick an authenticator);
    /// a pinUvAuthParam needs a supported protocol. Returns nil when there is no pinUvAuthParam.
    func pinUvAuthParameters(
        _ param: [UInt8]?, protocol version: Int?, activity: @Sendable (AuthenticatorActivity) -> Void
    ) async throws(CTAPError) -> PinUvAuthParameters? {
        guard let param else { return nil }
        if param.isEmpty {
            try await ask(
                ConsentRequest(action: .selection, requiresPresence: true, requiresVerification: false), activity)
            throw try await loadSettings().isPINSet ? .pinInvalid : .pinNotSet
        }
        guard let version else { throw .missingParameter }
        return PinUvAuthParameters(param: param, pinUvAuthProtocol: try Self.supportedProtocol(version))
    }

    /// Verifies a pinUvAuthParam against the current token for one permission (see `PinUvAuthTokenState`).
    func authorizeToken(
        _ parameters: PinUvAuthParameters, message: [UInt8], permission: PinUvAuthPermissions,
        relyingPartyID: String?
    ) throws(CTAPError) -> TokenAuthorization {
        let now = environment.now()
        let result = try state.withLock { (state) throws(CTAPError) in
            try state.pinToken.authorize(
                pinUvAuthParam: parameters.param, message: message, protocol: parameters.pinUvAuthProtocol,
                permission: permission, relyingPartyID: relyingPartyID, now: now)
        }
        return TokenAuthorization(userPresent: result.userPresent)
    }

    // MARK: Shared helpers

    static func supportedProtocol(_ version: Int) throws(CTAPError) -> PinUvAuthProtocol {
        let pinProtocol = PinUvAuthProtocol(rawValue: version)
        guard pinProtocol.isSupported else { throw .invalidParameter }
        return pinProtocol
    }

    /// `decapsulate`: the shared secret with the platform's key; a key that is not a P-256 point is
    /// CTAP1_ERR_INVALID_PARAMETER.
    private func sharedSecret(_ pinProtocol: PinUvAuthProtocol, _ keyAgreement: CBORValue) throws(CTAPError)
        -> [UInt8]
    {
        let key = state.withLock { $0.keyAgreementKey }
        do {
            return try pinProtocol.sharedSecret(privateKey: key, platformKey: keyAgreement)
        } catch {
            throw .invalidParameter
        }
    }

    /// A fresh key agreement key from injected randomness.
    static func keyAgreementKey(_ randomBytes: (Int) -> [UInt8]) -> P256.KeyAgreement.PrivateKey {
        while true {
            if let key = try? P256.KeyAgreement.PrivateKey(rawRepresentation: randomBytes(32)) { return key }
        }
    }

    /// Asks the user; when verification is asked for, the built-in UV retry counter is checked first, lowered on
    /// a failed verification (UV_INVALID, or UV_BLOCKED at zero) and restored on success.
    @discardableResult
    func consent(
        _ request: ConsentRequest, _ activity: @Sendable (AuthenticatorActivity) -> Void
    ) async throws(CTAPError) -> (userVerified: Bool, selectedAccount: Int?) {
        guard request.requiresVerification else { return try await ask(request, activity) }
        var settings = try await loadSettings()
        try Self.checkBuiltInVerificationUsable(settings)
        do {
            let approval = try await ask(request, activity)
            if approval.userVerified { state.withLock { $0.verificationsSincePINEntry += 1 } }
            if settings.uvRetries != AuthenticatorSettings.maximumUVRetries {
                settings.uvRetries = AuthenticatorSettings.maximumUVRetries
                try await saveSettings(settings)
            }
            return approval
        } catch {
            guard error == .userVerificationInvalid else { throw error }
            settings.uvRetries -= 1
            try await saveSettings(settings)
            throw settings.uvRetries == 0 ? .userVerificationBlocked : .userVerificationInvalid
        }
    }

    /// A blocked PIN disables built-in user verification too, until authenticatorReset (CTAP 2.1 §6.5.2.2):
    /// CTAP2_ERR_PIN_BLOCKED; no UV retries left is CTAP2_ERR_UV_BLOCKED.
    private static func checkBuiltInVerificationUsable(_ settings: AuthenticatorSettings) throws(CTAPError) {
        guard !settings.isPINSet || settings.pinRetries > 0 else { throw .pinBlocked }
        guard settings.uvRetries > 0 else { throw .userVerificationBlocked }
    }

    func loadSettings() async throws(CTAPError) -> AuthenticatorSettings {
        if let cached = state.withLock({ $0.settings }) { return cached }
        let settings = try await storeCall { try await $0.settings() }
        state.withLock { $0.settings = settings }
        return settings
    }

    /// Writes the settings; the cached copy changes only once the store has them.
    func saveSettings(_ settings: AuthenticatorSettings) async throws(CTAPError) {
        do throws(CTAPError) {
            try await storeCall { try await $0.saveSettings(settings) }
        } catch {
            // The store may or may not hold the new value: read it again next time.
            state.withLock { $0.settings = nil }
            throw error
        }
        state.withLock { $0.settings = settings }
    }
}
