import CTAP2
import CTAPHID
import PasskeyStoreIO

/// The security key role (`passkey serve`): the store's passkeys behind a CTAP2 authenticator that a platform reaches
/// over CTAPHID (UDP for tests, `/dev/uhid` for browsers, libfido2 and OpenSSH).
///
/// The policy here: opening the store took its passphrase, which is the built-in user verification itself, so a
/// blocked UV retry counter starts afresh; the key is a security key (transport usb, user verification when the
/// platform asks for it), or one without built-in verification at all (`pinOnly`), with the attestation format asked
/// for; and each request is answered with the keepalive status CTAPHID sends while the person is asked. The transport
/// is the caller's: it only carries reports.
public struct SecurityKeyService: Sendable {
    /// How the key presents itself.
    public struct Options: Hashable, Sendable {
        /// No built-in user verification: platforms verify the person with a PIN they set.
        public var pinOnly: Bool
        /// The attestation statement format of new credentials.
        public var attestation: AttestationFormat
        /// A phone stands behind the key (`SecurityKeyBridge`): getInfo is ``AuthenticatorConfiguration/phoneBridge``'s,
        /// with nothing a platform would bind to this key. Takes precedence over `pinOnly`.
        public var phoneBridge: Bool

        public init(pinOnly: Bool = false, attestation: AttestationFormat? = nil, phoneBridge: Bool = false) {
            self.pinOnly = pinOnly
            self.attestation = attestation ?? AuthenticatorConfiguration.securityKey.attestationFormat
            self.phoneBridge = phoneBridge
        }

        /// The authenticator's configuration for these options.
        public var configuration: AuthenticatorConfiguration {
            var configuration: AuthenticatorConfiguration =
                phoneBridge ? .phoneBridge : pinOnly ? .pinOnlySecurityKey : .securityKey
            configuration.attestationFormat = attestation
            return configuration
        }
    }

    /// The store, opened for serving (its lock held by the caller while the key runs).
    public let store: SQLiteCredentialStore
    public let authenticator: Authenticator
    /// How many passkeys the key serves (damaged rows are counted apart, and reported while counting).
    public let passkeyCount: Int

    /// Prepares the key: counts the passkeys, lifts a UV block (the passphrase was just given), and makes the
    /// authenticator that asks through `consent` and reports store failures to `interface`.
    public init(
        store: SQLiteCredentialStore, options: Options, consent: any UserInteraction,
        interface: any ProviderUserInterface
    ) throws(ProviderError) {
        self.store = store
        do {
            passkeyCount = try store.allCredentials().count
            var settings = try store.settings()
            if settings.uvRetries < AuthenticatorSettings.maximumUVRetries {
                settings.uvRetries = AuthenticatorSettings.maximumUVRetries
                try store.saveSettings(settings)
            }
        } catch {
            throw ProviderError(error.message)
        }
        authenticator = Authenticator(
            configuration: options.configuration,
            environment: AuthenticatorEnvironment(
                store: store, userInteraction: consent,
                reportError: { error in interface.report(.storeError("\(error)")) }))
    }

    /// Answers one CTAP request (command byte and CBOR) with status byte and CBOR, telling the transport through
    /// `keepalive` whether the key waits for the person or works.
    public func answer(
        _ request: [UInt8], keepalive: @escaping @Sendable (KeepaliveStatus) -> Void
    ) async -> [UInt8] {
        await authenticator.handle(request) { activity in
            keepalive(activity == .waitingForUser ? .userPresenceNeeded : .processing)
        }
    }
}
