import CTAP2
import Hybrid
import HybridDriver
import Proximity

/// Everything the provider reports while it works, for the interface to render. Events carry facts, not sentences.
public enum ProviderEvent: Sendable {
    /// A store was created because none existed.
    case storeCreated(path: String)
    /// Passkeys a relying party's signal hid were deleted, their grace period over (`Docs/Store.md`).
    case hiddenPasskeysDeleted(count: Int, graceDays: Int)
    /// A store row could not be read and was skipped.
    case damagedCredentialSkipped(String)
    /// The store failed under an authenticator request (the request was answered with an error).
    case storeError(String)
    /// Every request is approved without asking (`--yes`, `PASSKEY_ASSUME_YES=1`); `reason` names the switch.
    case unattendedApprovalOn(reason: String)
    /// A passphrase given as user verification was wrong; the person has this many tries left.
    case wrongPassphrase(attemptsLeft: Int)
    /// The unattended approver approved this.
    case autoApproved(UserAction, verification: Bool)
    /// The unattended approver answered yes to this question.
    case autoAnswered(ProviderQuestion)
    /// The unattended approver took entry `index` of this list.
    case autoChose(ChoiceRequest, index: Int)
    /// What an import will add, before the person is asked.
    case importing(ImportPreview)
    /// The phone's steps.
    case phone(PhoneEvent)
    /// The computer's (browser's) steps.
    case computer(ComputerEvent)
    /// Nearby sharing's steps.
    case share(ShareEvent)
    /// The security key's phone behind it (`SecurityKeyBridge`).
    case bridge(BridgeEvent)
}

/// What the phone behind the security key reports (`SecurityKeyBridge`).
public enum BridgeEvent: Hashable, Sendable {
    /// A request (by its CTAP command byte) goes to a phone: by QR code, or to the linked phone.
    case toPhone(command: UInt8, linked: Bool)
    /// A step of the phone's session.
    case session(HybridClientProgress)
    /// The linked phone could not be reached (`reason`); a QR code is shown instead.
    case linkedPhoneFailed(reason: String)
    /// The phone's answer went back to the browser, with its status byte.
    case answered(status: UInt8)
    /// No phone answered; the browser is told with `status` (cancelled 0x2D, timed out 0x2F, failed 0x7F).
    case failed(reason: String, status: UInt8)
}

/// What the phone role reports (`PhoneService`).
public enum PhoneEvent: Sendable {
    /// The QR code was read; the computer asks to create a passkey, or to sign in.
    case qrCodeRead(createsPasskey: Bool)
    /// The computer's QR code says it cannot store linking information: the phone will not link.
    case computerCannotLink
    /// The phone registered a contact at this relay, which can now wake it.
    case registered(relay: String)
    /// A step of the hybrid session, on this radio.
    case session(HybridAuthenticatorProgress, radio: ProximityMode, linked: Bool)
    /// The computer was sent linking information and will reach this phone through `relay`.
    case linked(relay: String, linkID: [UInt8])
    /// The session ended after answering `answered` requests; `listening` when the phone listens on.
    case done(answered: Int, listening: Bool)
    /// The wake channel's own events.
    case listener(ContactListenerEvent, relay: String)
    /// A wake named a link this phone does not have.
    case wakeIgnored(linkID: [UInt8])
    /// A session a linked computer started failed; the phone listens on.
    case linkedSessionFailed(reason: String)
    /// The phone stopped listening.
    case stopped
}

/// What the computer role reports (`BrowserService`, `ComputerLinks`).
public enum ComputerEvent: Hashable, Sendable {
    /// A phone sent linking information after a QR session and is kept, sealed, in `file` under `name`.
    case phoneRemembered(name: String, file: String)
    /// The clear links file of earlier versions (`from`) was moved into the sealed one (`to`) and removed: `count`
    /// links were added (those already sealed win).
    case linksSealed(count: Int, from: String, to: String)
    /// A phone sent linking information but the links file could not be written.
    case linkNotSaved(reason: String)
    /// The relay said the linked phone `name` revoked the link (410, or close code 4410): it was forgotten from
    /// `file`.
    case linkRevoked(name: String, file: String)
    /// The local relying party accepted the answer (`client register`, `client sign-in`); its state is saved.
    case verifiedByRelyingParty
}
