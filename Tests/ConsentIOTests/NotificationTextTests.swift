import CTAP2
import DBus
import Hybrid
import PasskeyProvider
import QRImageIO
import Testing

@testable import ConsentIO

@Suite("What a notification offers and how its answer is read")
struct NotificationTextTests {
    static let alice = AccountSummary(
        relyingPartyID: "example.com", userName: "alice", userDisplayName: nil, credentialID: [1])
    static let bob = AccountSummary(
        relyingPartyID: "example.com", userName: "<b>bob</b>", userDisplayName: nil, credentialID: [2])

    @Test("Allow and Deny, or one action per account; the body's markup escaped")
    func actionsAndBody() {
        let single = ConsentPrompt(
            action: .makeCredential(relyingPartyID: "example.com", userName: "alice", userDisplayName: nil),
            verification: .notGiven(reason: "a <reason> & more"), accounts: [], timeout: .seconds(60))
        #expect(DesktopNotifications.actions(for: single) == ["allow", "Allow", "deny", "Deny"])
        #expect(DesktopNotifications.body(for: single).contains("a &lt;reason&gt; &amp; more"))
        #expect(!DesktopNotifications.body(for: single).contains("<"))
        let choice = ConsentPrompt(
            action: .getAssertion(
                relyingPartyID: "example.com", accounts: [Self.alice, Self.bob], chooseOnAuthenticator: true),
            verification: .notNeeded, accounts: [Self.alice, Self.bob], timeout: .seconds(60))
        #expect(
            DesktopNotifications.actions(for: choice) == [
                "account-0", "Sign in as alice", "account-1", "Sign in as <b>bob</b>", "deny", "Deny",
            ])
    }

    @Test("Where to create: this computer, a phone, or Deny; the details say what each means")
    func whereToCreate() {
        let prompt = ConsentPrompt.whereToCreate(
            relyingPartyID: "example.com", userName: "alice", timeout: .seconds(60))
        #expect(prompt.summary == "example.com asks to create a passkey for alice")
        #expect(
            DesktopNotifications.actions(for: prompt) == [
                "place-0", "Create it on this computer", "place-1", "Create it on a phone", "deny", "Deny",
            ])
        #expect(
            prompt.details.first == "Choose where: this computer (the passkey store), or a phone (shows a QR code).")
        #expect(DesktopNotifications.answer(forAction: "place-0", prompt: prompt) == .given(0))
        #expect(DesktopNotifications.answer(forAction: "place-1", prompt: prompt) == .given(1))
        #expect(DesktopNotifications.answer(forAction: "place-2", prompt: prompt) == nil)
        #expect(DesktopNotifications.answer(forAction: "deny", prompt: prompt) == .declined)
        // Neither a bare Allow nor an account answers where.
        #expect(DesktopNotifications.answer(forAction: "allow", prompt: prompt) == nil)
        #expect(DesktopNotifications.answer(forAction: "account-1", prompt: prompt) == nil)
        #expect(DesktopNotifications.describe(1, of: prompt) == "a phone")
    }

    @Test("an action key is read as the answer it names, and only keys that were offered count")
    func answers() {
        let allow = ConsentPrompt(
            action: .makeCredential(relyingPartyID: "example.com", userName: "alice", userDisplayName: nil),
            verification: .notNeeded, accounts: [], timeout: .seconds(60))
        let choice = ConsentPrompt(
            action: .getAssertion(
                relyingPartyID: "example.com", accounts: [Self.alice, Self.bob], chooseOnAuthenticator: true),
            verification: .notNeeded, accounts: [Self.alice, Self.bob], timeout: .seconds(60))
        #expect(DesktopNotifications.answer(forAction: "allow", prompt: allow) == .given(0))
        #expect(DesktopNotifications.answer(forAction: "deny", prompt: allow) == .declined)
        #expect(DesktopNotifications.answer(forAction: "default", prompt: allow) == nil)
        #expect(DesktopNotifications.answer(forAction: "account-1", prompt: choice) == .given(1))
        #expect(DesktopNotifications.answer(forAction: "account-2", prompt: choice) == nil)
        #expect(DesktopNotifications.answer(forAction: "account--1", prompt: choice) == nil)
        #expect(DesktopNotifications.answer(forAction: "place-1", prompt: choice) == nil)
        // With a choice to make, a bare Allow was not offered.
        #expect(DesktopNotifications.answer(forAction: "allow", prompt: choice) == nil)
        #expect(DesktopNotifications.answer(forAction: "account-0", prompt: allow) == nil)
        #expect(DesktopNotifications.describe(1, of: choice) == "account 2")
        #expect(DesktopNotifications.describe(0, of: allow) == "allow")
    }

    @Test("A QR code's image-data hint: (iiibiiay), RGB rows of 3 × width bytes, read back as the URL")
    func qrCodeImageHint() throws {
        let url = "FIDO:/0123456789012345678901234567890123456789"
        let image = try QRMatrix(encoding: url).grayImage(moduleSize: 6, quietZone: 4)
        let hint = DesktopNotifications.imageData(image)
        #expect(hint.signature == "(iiibiiay)")
        guard case .structure(let fields) = hint, fields.count == 7, case .int32(let width) = fields[0],
            case .int32(let height) = fields[1], case .int32(let stride) = fields[2], case .bool(let alpha) = fields[3],
            case .int32(let bits) = fields[4], case .int32(let channels) = fields[5], let rgb = fields[6].bytesValue
        else {
            Issue.record("the hint is not (iiibiiay): \(hint)")
            return
        }
        #expect(Int(width) == image.width && Int(height) == image.height)
        #expect(Int(stride) == image.width * 3 && !alpha && bits == 8 && channels == 3)
        #expect(rgb.count == image.width * image.height * 3)
        let gray = Swift.stride(from: 0, to: rgb.count, by: 3).map { rgb[$0] }
        #expect(try QRImageReader.decode(grayPixels: gray, width: image.width, height: image.height) == [url])
    }

    @Test("Every notification's Notify arguments: susssasa{sv}i, critical, from passkey, the image only when given")
    func notifyArguments() throws {
        let plain = DesktopNotifications.notifyArguments(
            icon: "dialog-password", summary: "S", body: "B", actions: ["allow", "Allow"], timeout: .seconds(45))
        #expect(plain.map(\.signature).joined() == "susssasa{sv}i")
        #expect(plain[0] == .string("passkey") && plain[1] == .uint32(0) && plain[2] == .string("dialog-password"))
        #expect(plain[5] == .strings(["allow", "Allow"]) && plain[7] == .int32(45_000))
        #expect(
            plain[6]
                == .variantDictionary([
                    "urgency": .byte(2), "category": .string("device"), "desktop-entry": .string("passkey"),
                ]))
        let image = DesktopNotifications.imageData(
            try QRMatrix(encoding: "FIDO:/1234").grayImage(moduleSize: 1, quietZone: 0))
        let withImage = DesktopNotifications.notifyArguments(
            icon: "phone", summary: "S", body: "B", actions: [], timeout: .seconds(1), image: image)
        #expect(withImage.map(\.signature).joined() == "susssasa{sv}i")
        #expect(
            withImage[6]
                == .variantDictionary([
                    "urgency": .byte(2), "category": .string("device"), "desktop-entry": .string("passkey"),
                    "image-data": image,
                ]))
    }

    @Test("With no QR code on the screen, the phone coming near or the request ending does not reach for the bus")
    func withdrawingNothingOpensNoConnection() async throws {
        let logged = Recorder<String>()
        // No session bus in the environment: any attempt to reach one is logged.
        let interface = ConsentChannelInterface(
            routes: [.notification], terminal: NobodyAtTheTerminal(), queue: nil, timeout: .seconds(5),
            environment: [:], log: { logged.append($0) })
        interface.report(.bridge(.answered(status: 0)))
        interface.report(.bridge(.failed(reason: "timed out", status: 0x2F)))
        try await Task.sleep(for: .milliseconds(300))
        #expect(logged.all.isEmpty, "\(logged.all)")
        // Showing one does reach for it (and, with no bus, says so): the test can tell the two apart.
        interface.report(.bridge(.session(.showQRCode(url: "FIDO:/1234"))))
        for _ in 0..<100 where logged.all.isEmpty { try await Task.sleep(for: .milliseconds(20)) }
        #expect(logged.all.contains { $0.hasPrefix("passkey: consent: no session bus for notifications") })
        await interface.close()
    }
}
