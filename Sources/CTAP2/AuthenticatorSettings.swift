/// What the authenticator keeps besides credentials: the PIN, its retry counters and the settings
/// authenticatorConfig changes (CTAP 2.1 §6.5, §6.11). Stores persist it; the default is a fresh authenticator.
///
/// The PIN itself is never kept, only `LEFT(SHA-256(PIN), 16)`, and stores that persist this encrypt it at rest.
/// `description` never shows the hash.
public struct AuthenticatorSettings: Hashable, Sendable, CustomStringConvertible, CustomReflectable {
    /// PIN attempts before the PIN is blocked for good (CTAP 2.1 §6.5.2.2: maximum 8).
    public static let maximumPINRetries = 8
    /// Built-in user verification attempts before UV is blocked.
    public static let maximumUVRetries = 8
    /// The shortest PIN accepted, in Unicode code points, until authenticatorConfig raises it.
    public static let defaultMinimumPINLength = 4

    /// `LEFT(SHA-256(PIN), 16)` of the current PIN; nil when no PIN is set.
    public var pinHash: [UInt8]?
    /// The current PIN's length in code points, so a raised minimum can force a change.
    public var pinCodePointCount: Int
    /// PIN attempts left; a correct PIN puts it back to the maximum.
    public var pinRetries: Int
    /// Built-in user verification attempts left; success puts it back to the maximum.
    public var uvRetries: Int
    /// The shortest new PIN accepted, in code points.
    public var minimumPINLength: Int
    /// Relying parties that may read `minimumPINLength` through the minPinLength extension.
    public var minimumPINLengthRelyingParties: [String]
    /// alwaysUv: every makeCredential and getAssertion needs user verification.
    public var alwaysUV: Bool
    /// The PIN must be changed before it can be used to get a token.
    public var forcePINChange: Bool
    /// 32 random bytes made when the first persistent read-only token (CTAP 2.2 `pcmr`) is issued, and forgotten at
    /// reset: the persistent token, the device identifier and the credential-store state of getInfo are derived from
    /// it (``Authenticator``'s persistent token). Stores seal it; nil until then.
    public var deviceSecret: [UInt8]?

    public init(
        pinHash: [UInt8]? = nil,
        pinCodePointCount: Int = 0,
        pinRetries: Int = Self.maximumPINRetries,
        uvRetries: Int = Self.maximumUVRetries,
        minimumPINLength: Int = Self.defaultMinimumPINLength,
        minimumPINLengthRelyingParties: [String] = [],
        alwaysUV: Bool = false,
        forcePINChange: Bool = false,
        deviceSecret: [UInt8]? = nil
    ) {
        self.pinHash = pinHash
        self.pinCodePointCount = pinCodePointCount
        self.pinRetries = pinRetries
        self.uvRetries = uvRetries
        self.minimumPINLength = minimumPINLength
        self.minimumPINLengthRelyingParties = minimumPINLengthRelyingParties
        self.alwaysUV = alwaysUV
        self.forcePINChange = forcePINChange
        self.deviceSecret = deviceSecret
    }

    /// Whether a PIN is set (getInfo option `clientPin: true`).
    public var isPINSet: Bool { pinHash != nil }

    /// Shows whether a PIN is set, never its hash or the device secret, so `dump` cannot reveal them either.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "pin": isPINSet ? "set" : "not set", "pinRetries": pinRetries, "uvRetries": uvRetries,
                "minimumPINLength": minimumPINLength, "alwaysUV": alwaysUV, "forcePINChange": forcePINChange,
            ],
            displayStyle: .struct)
    }

    /// Names the settings and whether a PIN is set; never the PIN hash or the device secret.
    public var description: String {
        "AuthenticatorSettings(pin: \(isPINSet ? "set" : "not set"), pinRetries: \(pinRetries), "
            + "uvRetries: \(uvRetries), minimumPINLength: \(minimumPINLength), alwaysUV: \(alwaysUV), "
            + "forcePINChange: \(forcePINChange))"
    }
}
