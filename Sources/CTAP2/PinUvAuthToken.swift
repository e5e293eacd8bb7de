/// What a pinUvAuthToken may be used for (CTAP 2.1 §6.5.5.7).
public struct PinUvAuthPermissions: OptionSet, Hashable, Sendable {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// mc: authenticatorMakeCredential, bound to one RP ID.
    public static let makeCredential = PinUvAuthPermissions(rawValue: 0x01)
    /// ga: authenticatorGetAssertion, bound to one RP ID.
    public static let getAssertion = PinUvAuthPermissions(rawValue: 0x02)
    /// cm: authenticatorCredentialManagement, for every RP or, with an RP ID, for that one only.
    public static let credentialManagement = PinUvAuthPermissions(rawValue: 0x04)
    /// be: authenticatorBioEnrollment (no biometrics here: never granted).
    public static let bioEnrollment = PinUvAuthPermissions(rawValue: 0x08)
    /// lbw: authenticatorLargeBlobs writes.
    public static let largeBlobWrite = PinUvAuthPermissions(rawValue: 0x10)
    /// acfg: authenticatorConfig.
    public static let authenticatorConfiguration = PinUvAuthPermissions(rawValue: 0x20)
    /// pcmr (CTAP 2.2): a persistent token that reads credential management (metadata and the two enumerations)
    /// and nothing else; asked for on its own.
    public static let persistentCredentialManagementReadOnly = PinUvAuthPermissions(rawValue: 0x40)
}

/// The one pinUvAuthToken and its state (CTAP 2.1 §6.5.2.1): a pure value the authenticator keeps per
/// power cycle. Time is passed in.
struct PinUvAuthTokenState {
    /// A token not used this long after it was issued expires (initialUsageTimeLimit).
    static let initialUsageTimeLimit = Duration.seconds(30)
    /// A token expires this long after it was issued, however it is used (maxUsageTimePeriod).
    static let maximumUsagePeriod = Duration.seconds(600)
    /// The user-present flag lasts this long after the token was issued (userPresentTimeLimit).
    static let userPresentTimeLimit = Duration.seconds(30)

    private(set) var token: [UInt8]
    private(set) var pinUvAuthProtocol: PinUvAuthProtocol?
    private(set) var permissions: PinUvAuthPermissions = []
    private(set) var relyingPartyID: String?
    private var userPresent = false
    private var userVerified = false
    private var issuedAt: ContinuousClock.Instant?
    private var used = false

    init(token: [UInt8]) {
        self.token = token
    }

    /// resetPinUvAuthToken and beginUsingPinUvAuthToken: a fresh token with these permissions. Any earlier token
    /// stops working.
    mutating func issue(
        token: [UInt8], protocol pinUvAuthProtocol: PinUvAuthProtocol, permissions: PinUvAuthPermissions,
        relyingPartyID: String?, userPresent: Bool, now: ContinuousClock.Instant
    ) {
        self = PinUvAuthTokenState(token: token)
        self.pinUvAuthProtocol = pinUvAuthProtocol
        self.permissions = permissions
        self.relyingPartyID = relyingPartyID
        self.userPresent = userPresent
        self.userVerified = true
        self.issuedAt = now
    }

    /// stopUsingPinUvAuthToken: no token is valid until the next is issued.
    mutating func revoke(newToken: [UInt8]) {
        self = PinUvAuthTokenState(token: newToken)
    }

    /// Whether a token is in use and has not expired at `now`; an expired token is revoked in place.
    mutating func isInUse(now: ContinuousClock.Instant) -> Bool {
        guard let issuedAt else { return false }
        let age = now - issuedAt
        if age > Self.maximumUsagePeriod || (!used && age > Self.initialUsageTimeLimit) {
            revoke(newToken: token)
            return false
        }
        return true
    }

    /// Checks `pinUvAuthParam` over `message` and the permission (CTAP 2.1 §6.1.2 step 6 and the same steps of the
    /// other commands): a wrong protocol, signature, permission or RP ID, or an expired token, is
    /// CTAP2_ERR_PIN_AUTH_INVALID. On success the token counts as used and an unbound token is bound to
    /// `relyingPartyID` when the permission binds one. Returns the token's user-present flag.
    mutating func authorize(
        pinUvAuthParam: [UInt8], message: [UInt8], protocol pinUvAuthProtocol: PinUvAuthProtocol,
        permission: PinUvAuthPermissions, relyingPartyID: String?, now: ContinuousClock.Instant
    ) throws(CTAPError) -> (userPresent: Bool, userVerified: Bool) {
        guard isInUse(now: now), self.pinUvAuthProtocol == pinUvAuthProtocol,
            pinUvAuthProtocol.verify(key: token, message: message, signature: pinUvAuthParam)
        else { throw .pinAuthInvalid }
        guard permissions.contains(permission) else { throw .pinAuthInvalid }
        if let bound = self.relyingPartyID, let relyingPartyID, bound != relyingPartyID { throw .pinAuthInvalid }
        let bindsRelyingParty = !permission.isDisjoint(with: [.makeCredential, .getAssertion])
        if bindsRelyingParty, !userVerified { throw .pinAuthInvalid }
        if self.relyingPartyID == nil, bindsRelyingParty { self.relyingPartyID = relyingPartyID }
        used = true
        let userPresent = self.userPresent && now - (issuedAt ?? now) <= Self.userPresentTimeLimit
        return (userPresent, userVerified)
    }

    /// After makeCredential or getAssertion with user presence: the flags are spent and only lbw survives.
    mutating func consumeAfterUse() {
        guard issuedAt != nil else { return }
        userPresent = false
        userVerified = false
        permissions.formIntersection(.largeBlobWrite)
    }
}
