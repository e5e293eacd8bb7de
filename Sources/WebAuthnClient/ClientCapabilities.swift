/// `PublicKeyCredential.getClientCapabilities()` (WebAuthn Level 3 §5.1.7): what this client can do on this machine
/// as it is now, as the map a page would get. Every value says what this program does today; nothing is claimed for
/// what it does not do (`passkey client capabilities`).
public enum ClientCapabilities {
    /// What the answer depends on, found by the caller.
    public struct Machine: Hashable, Sendable {
        /// A Bluetooth radio this client can scan with now (the configured one: bluetoothd's adapter powered, a raw
        /// HCI socket, or the simulated radio), so a phone can be reached by QR code.
        public var radioUsable: Bool
        /// A passkey store exists: this computer's authenticator, with the store passphrase as its user
        /// verification.
        public var storeExists: Bool

        public init(radioUsable: Bool, storeExists: Bool) {
            self.radioUsable = radioUsable
            self.storeExists = storeExists
        }
    }

    /// The client extension inputs this client processes (``ClientExtensionInputs``), each reported as
    /// `extension:NAME`, as Chromium names them after their input members.
    public static let extensions = [
        "credBlob", "credProps", "credentialProtectionPolicy", "enforceCredentialProtectionPolicy", "getCredBlob",
        "largeBlob", "minPinLength", "prf",
    ]

    /// The capability map for `machine`, by key (the `ClientCapability` names of §5.1.7 and the extensions):
    /// - `conditionalGet`: `client get --mediation conditional` lists this computer's passkeys as autofill does.
    /// - `conditionalCreate`: a store exists: `client create --mediation conditional` makes a passkey there with no
    ///   dialog right after a password fill (``ConditionalCreate``).
    /// - `hybridTransport`: a radio to hear a phone's advertisement is usable now.
    /// - `passkeyPlatformAuthenticator`, `userVerifyingPlatformAuthenticator`: a store exists (its passphrase is the
    ///   user verification).
    /// - `relatedOrigins`: origins listed in the RP ID's `/.well-known/webauthn` are accepted (§5.11).
    /// - the three `signal…` methods: a store exists for `client signal` to act on (hide, show again, rename).
    public static func map(for machine: Machine) -> [String: Bool] {
        var map: [String: Bool] = [
            "conditionalCreate": machine.storeExists,
            "conditionalGet": true,
            "hybridTransport": machine.radioUsable,
            "passkeyPlatformAuthenticator": machine.storeExists,
            "userVerifyingPlatformAuthenticator": machine.storeExists,
            "relatedOrigins": true,
            "signalAllAcceptedCredentials": machine.storeExists,
            "signalCurrentUserDetails": machine.storeExists,
            "signalUnknownCredential": machine.storeExists,
        ]
        for name in extensions { map["extension:\(name)"] = true }
        return map
    }
}
