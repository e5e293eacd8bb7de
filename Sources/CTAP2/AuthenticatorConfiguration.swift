import Basics
import CBOR
import WebAuthn

/// What kind of attestation statement makeCredential returns.
public enum AttestationFormat: String, Hashable, Sendable, CaseIterable {
    /// `none`: no statement (the default; what passkey providers send).
    case none
    /// `packed` self attestation: the credential key signs its own registration.
    case packedSelf = "packed"
}

/// Who picks the account when several discoverable credentials match a getAssertion.
public enum AccountSelection: Hashable, Sendable {
    /// The platform: the authenticator returns numberOfCredentials and pages with
    /// getNextAssertion (authenticators without a display, CTAP 2.1 §6.2.2).
    case platform
    /// The authenticator shows a chooser and returns the one chosen with `userSelected`.
    case authenticator
}

/// When the authenticator verifies the user with its built-in method (the store passphrase) without a
/// pinUvAuthToken. A request with a valid token is verified by the token in either case.
public enum UserVerificationPolicy: Hashable, Sendable {
    /// A security key (CTAP 2.1 §6.1.2, §6.2.2): built-in verification when the platform asks with the `uv` option
    /// or alwaysUv is on. One addition to the specification: a discoverable makeCredential with neither a token nor
    /// `uv` (what libfido2, and so OpenSSH, sends when it has no PIN) is verified with the built-in method when no PIN
    /// is set, where §6.1.2 step 7 answers CTAP2_ERR_PUAT_REQUIRED, which such platforms can only answer by asking
    /// for a PIN that does not exist. With a PIN set it is still CTAP2_ERR_PUAT_REQUIRED, so the platform asks for
    /// the PIN (Docs/CTAP.md).
    case whenRequested
    /// A phone over hybrid: every makeCredential and getAssertion without a token is verified with the built-in
    /// method, whatever its options say, as Android and iOS phones do with the screen lock. Chromium sends a phone
    /// no `uv` option when its getInfo says makeCredUvNotRqd, so a phone must never answer CTAP2_ERR_PUAT_REQUIRED.
    /// getInfo reports alwaysUv and no makeCredUvNotRqd accordingly.
    case always
    /// A security key without built-in user verification, like most hardware keys (no fingerprint reader): the PIN,
    /// set by a platform, is the only verification, and it reaches the authenticator as a pinUvAuthToken. getInfo
    /// leaves out `uv` and `uvAcfg` (CTAP 2.1 §6.4); `uv: true` is CTAP2_ERR_INVALID_OPTION (§6.1.2 step 5, §6.2.2
    /// step 4); getPinUvAuthTokenUsingUvWithPermissions and getUVRetries are CTAP2_ERR_INVALID_SUBCOMMAND. "Protected
    /// by some form of user verification" means a PIN is set: without one, a discoverable makeCredential without a
    /// token is made with user presence only; with one it is CTAP2_ERR_PUAT_REQUIRED, so the platform asks for the
    /// PIN. With alwaysUv every makeCredential, and every getAssertion with user presence, needs a token (§6.1.2 step
    /// 6, §6.2.2 step 5).
    case pinOnly

    /// Whether the authenticator has a built-in method (the store passphrase): getInfo `uv`.
    public var hasBuiltInVerification: Bool { self != .pinOnly }
}

/// Fixed facts about this authenticator.
public struct AuthenticatorConfiguration: Sendable {
    /// This project's AAGUID: 8391e378-32c7-4aa5-ad16-6f0cf4ad7b23.
    public static let projectAAGUID = AAGUID(bytes: [UInt8](hex: "8391e37832c74aa5ad166f0cf4ad7b23")!)!

    public var aaguid = Self.projectAAGUID
    public var attestationFormat = AttestationFormat.none
    /// The algorithms makeCredential makes keys for (the first of the platform's list that is here wins), as getInfo
    /// lists them.
    public var algorithms = CredentialPrivateKey.algorithms
    /// Length of new credential IDs in bytes (16 or more).
    public var credentialIDLength = 32
    /// BE for new credentials: the store can be copied to another machine, as synced passkeys are.
    public var backupEligible = true
    /// BS for new credentials; only ever set together with BE.
    public var backupState = true
    public var accountSelection = AccountSelection.platform
    /// authenticatorReset is accepted only this long after start-up (CTAP 2.1 §6.6).
    public var resetWindow = Duration.seconds(10)
    /// How long getNextAssertion may follow its getAssertion (CTAP 2.1 §6.3).
    public var nextAssertionTimeout = Duration.seconds(30)
    /// The largest request accepted and reported in getInfo.
    public var maximumMessageSize = 7609
    /// The transports getInfo reports: how platforms reach this authenticator, which they pass on to relying parties
    /// with each new credential. `usb` for a security key (the default); see ``hybridPhone(oneRequestPerSession:)``.
    public var transports = ["usb"]
    /// When the user is verified with the built-in method without being asked to.
    public var userVerification = UserVerificationPolicy.whenRequested
    /// How many discoverable credentials credential management reports room for in all.
    public var credentialCapacity = 100_000
    /// The most descriptors an allowList or excludeList may hold (getInfo maxCredentialCountInList).
    public var maximumCredentialCountInList = 16
    /// The longest credential ID in a list that can be one of ours (getInfo maxCredentialIdLength).
    public var maximumCredentialIDLength = 128
    /// The transport carries one request per session (a hybrid phone that answers one request per QR code, each
    /// with a fresh authenticator). getInfo then leaves out what needs a later request to the same authenticator:
    /// the PIN/UV auth protocols and tokens, clientPin, credential management, config, large blobs, and the
    /// hmac-secret and largeBlobKey extensions, so platforms use built-in UV (`uv: true`) directly.
    public var oneRequestPerSession = false
    /// makeCredential accepts the `up` option false: the credential is made with no consent, no verification and the
    /// UP flag clear. Only for an authenticator in the client's own process (``platform``), whose client decided that
    /// the person already agreed (an automatic passkey upgrade, WebAuthn L3 conditional create: "the client MUST set
    /// both requireUserPresence and requireUserVerification to false"); never over a transport, where CTAP 2.1
    /// §6.1.2 step 5 refuses the option (CTAP2_ERR_INVALID_OPTION), as every other configuration does.
    public var makesCredentialsWithoutPresence = false
    /// getInfo firmwareVersion: the program's version (``PackageVersion``) as major << 16 | minor << 8 | patch.
    public var firmwareVersion = PackageVersion.number
    /// The longest serialized large-blob array kept (getInfo maxSerializedLargeBlobArray; at least 1024).
    public var maximumLargeBlobArrayLength = 4096

    public init() {}

    /// A security key, as `passkey serve` is over uhid and UDP: transport `usb`, built-in verification when asked,
    /// and packed self attestation as security keys attest (libfido2's `fido_cred_verify_self`, which OpenSSH calls
    /// on every new key, refuses the format `none`).
    public static let securityKey: AuthenticatorConfiguration = {
        var configuration = AuthenticatorConfiguration()
        configuration.attestationFormat = .packedSelf
        return configuration
    }()

    /// A security key with a phone behind it, as `passkey serve --phone` is: like ``securityKey``, but getInfo is the
    /// one-request profile (``oneRequestPerSession``): built-in `uv`, no clientPin, PIN/UV auth protocols or tokens,
    /// no credential management, config, large blobs or hmac-secret. Platforms then send plain `uv: true` requests
    /// with nothing bound to this key, which a phone can answer unchanged.
    public static let phoneBridge: AuthenticatorConfiguration = {
        var configuration = securityKey
        configuration.oneRequestPerSession = true
        return configuration
    }()

    /// A security key without built-in user verification, as `passkey serve --pin-only` is: like ``securityKey``, but
    /// the PIN is the only user verification (``UserVerificationPolicy/pinOnly``), as on most hardware keys, so
    /// platforms ask for the PIN.
    public static let pinOnlySecurityKey: AuthenticatorConfiguration = {
        var configuration = securityKey
        configuration.userVerification = .pinOnly
        return configuration
    }()

    /// This computer's own authenticator, as the WebAuthn client (`passkey client create|get`) uses the store in
    /// process: transport `internal`, the platform chooses the account, user verification by the store passphrase
    /// when asked, and attestation `none`, as platform authenticators give.
    public static let platform: AuthenticatorConfiguration = {
        var configuration = AuthenticatorConfiguration()
        configuration.transports = ["internal"]
        configuration.attestationFormat = .none
        configuration.makesCredentialsWithoutPresence = true
        return configuration
    }()

    /// A phone answering over hybrid, as `passkey scan` and the demo's phone are: it chooses the account itself,
    /// verifies the user for every request (``UserVerificationPolicy/always``), and reports the transport `hybrid`
    /// only. Android adds `internal` because its passkeys also serve the phone's own browser as a platform
    /// authenticator; no browser uses this store that way, so `internal` would send relying parties and browsers
    /// looking for a platform credential that is not there. It makes ES256 keys only, as the phones' own passkey
    /// providers do (Google Password Manager, iCloud Keychain), whatever the relying party lists first.
    public static func hybridPhone(oneRequestPerSession: Bool) -> AuthenticatorConfiguration {
        var configuration = AuthenticatorConfiguration()
        configuration.algorithms = [.es256]
        configuration.transports = ["hybrid"]
        configuration.userVerification = .always
        configuration.accountSelection = .authenticator
        configuration.oneRequestPerSession = oneRequestPerSession
        return configuration
    }

    /// Whether every makeCredential and getAssertion without a token needs user verification: alwaysUv is on, or this
    /// is a phone (``UserVerificationPolicy/always``).
    func verifiesEveryRequest(_ settings: AuthenticatorSettings) -> Bool {
        userVerification == .always || settings.alwaysUV
    }

    /// The getInfo options (CTAP 2.1 §6.4) with these settings, in the order `passkey info` lists them: only what is
    /// implemented. Without built-in user verification there is no `uv` and no `uvAcfg` (which says the acfg
    /// permission can come through built-in verification). One request per session leaves out what needs a second
    /// request (the PIN, tokens, management, config, large blobs).
    public func getInfoOptions(_ settings: AuthenticatorSettings) -> [(id: String, value: Bool)] {
        let builtIn = userVerification.hasBuiltInVerification
        let alwaysVerifies = verifiesEveryRequest(settings)
        var options: [(id: String, value: Bool)] = [("rk", true), ("up", true)]
        if builtIn { options.append(("uv", true)) }
        if oneRequestPerSession {
            // A phone that verifies every request says no more than rk, up and uv, as Android and iOS do.
            if userVerification != .always { options.append(("makeCredUvNotRqd", !alwaysVerifies)) }
            return options
        }
        options += [
            ("clientPin", settings.isPINSet), ("pinUvAuthToken", true), ("makeCredUvNotRqd", !alwaysVerifies),
            ("credMgmt", true), ("perCredMgmtRO", true), ("authnrCfg", true),
        ]
        if builtIn { options.append(("uvAcfg", true)) }
        options += [("setMinPINLength", true), ("alwaysUv", alwaysVerifies), ("largeBlobs", true)]
        return options
    }
}
