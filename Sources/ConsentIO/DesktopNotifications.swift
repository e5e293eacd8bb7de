import CTAP2
import DBus
import Foundation
import PasskeyProvider
import QRImageIO

/// Consent through the desktop's notification server (the freedesktop `org.freedesktop.Notifications` interface on
/// the session bus): a notification with the actions Allow and Deny (or one action per account to choose from),
/// the app name `passkey` and an expiry of the request's timeout; the answer is its `ActionInvoked` signal, a
/// `NotificationClosed` without one is a decline (dismissed) or a timeout (expired), and a request still open at
/// its deadline is withdrawn with `CloseNotification`. Only signals from the server that took the notification
/// count.
public final class DesktopNotifications: Sendable {
    static let service = "org.freedesktop.Notifications"
    static let path = "/org/freedesktop/Notifications"

    let connection: DBusConnection

    public init(connection: DBusConnection) { self.connection = connection }

    static func method(_ member: String) -> DBusMethod {
        DBusMethod(destination: service, path: path, interface: service, member: member)
    }

    /// How long the notification server has to take a notification before the route is given up.
    static let notifyTimeout = Duration.seconds(5)

    /// What the notification offers: each action's key and label.
    static func actions(for prompt: ConsentPrompt) -> [String] {
        let choices = prompt.choices
        switch prompt.choice {
        case .account where !choices.isEmpty:
            return choices.enumerated().flatMap { ["account-\($0.offset)", "Sign in as " + $0.element] } + [
                "deny", "Deny",
            ]
        case .place:
            return ["place-0", "Create it on this computer", "place-1", "Create it on a phone", "deny", "Deny"]
        case .allow, .account:
            return ["allow", "Allow", "deny", "Deny"]
        }
    }

    /// The notification's body: the details, with the markup some servers read escaped.
    static func body(for prompt: ConsentPrompt) -> String {
        prompt.details.joined(separator: "\n").replacing("&", with: "&amp;").replacing("<", with: "&lt;")
            .replacing(">", with: "&gt;")
    }

    /// What an action key answers: an account's or a place's index, 0 for Allow, a decline for Deny; nil for a key
    /// the notification did not offer.
    static func answer(forAction key: String, prompt: ConsentPrompt) -> PromptAnswer<Int>? {
        if key == "deny" { return .declined }
        let choices = prompt.choices
        if key == "allow", choices.isEmpty { return .given(0) }
        let prefix = prompt.choice == .place ? "place-" : "account-"
        guard !choices.isEmpty, key.hasPrefix(prefix), let index = Int(key.dropFirst(prefix.count)),
            choices.indices.contains(index)
        else { return nil }
        return .given(index)
    }

    /// An answer in the log: `allow`, `account 2`, `a phone`.
    static func describe(_ index: Int, of prompt: ConsentPrompt) -> String {
        switch prompt.choice {
        case .place: ConsentChoice.places.indices.contains(index) ? ConsentChoice.places[index] : "place \(index + 1)"
        case .account where !prompt.choices.isEmpty: "account \(index + 1)"
        case .allow, .account: "allow"
        }
    }

    /// Asks `prompt`; nil when no notification server takes it (the next route then asks). `log` gets one line when
    /// the notification is sent and one for its answer.
    public func ask(_ prompt: ConsentPrompt, log: @Sendable (String) -> Void) async -> PromptAnswer<Int>? {
        let signals: AsyncStream<DBusMessage>
        do {
            signals = try await connection.signals(
                matching: DBusMatchRule(path: Self.path, interface: Self.service))
        } catch {
            log("passkey: consent: no notification: \(error)")
            return nil
        }
        let reply: DBusMessage
        do {
            reply = try await connection.call(
                Self.method("Notify"),
                Self.notifyArguments(
                    icon: "dialog-password", summary: prompt.summary, body: Self.body(for: prompt),
                    actions: Self.actions(for: prompt), timeout: prompt.timeout),
                timeout: Self.notifyTimeout)
        } catch is CancellationError {
            return .cancelled
        } catch let error as DBusError {
            log("passkey: consent: no notification server answered (\(error)); asking the next way")
            return nil
        } catch {
            return nil
        }
        var arguments = reply.arguments
        guard let id = try? arguments.next(UInt32.self), let server = reply.sender else {
            log("passkey: consent: the notification server's reply is not a notification ID; asking the next way")
            return nil
        }
        log("passkey: consent: notification \(id) sent: \(prompt.summary)")
        let answer = await withTaskGroup(of: PromptAnswer<Int>.self) { group -> PromptAnswer<Int> in
            group.addTask {
                for await signal in signals where signal.sender == server {
                    var arguments = signal.arguments
                    guard (try? arguments.next(UInt32.self)) == id else { continue }
                    switch signal.member {
                    case "ActionInvoked":
                        guard let key = try? arguments.next(String.self),
                            let answer = Self.answer(forAction: key, prompt: prompt)
                        else { continue }
                        return answer
                    case "NotificationClosed":
                        // 1: expired; 2: dismissed by the person; 3: closed by a call; 4: undefined.
                        return (try? arguments.next(UInt32.self)) == 1 ? .timedOut : .declined
                    default: continue
                    }
                }
                return .cancelled
            }
            group.addTask {
                do {
                    try await Task.sleep(for: prompt.timeout)
                    return .timedOut
                } catch {
                    return .cancelled
                }
            }
            let first = await group.next() ?? .cancelled
            group.cancelAll()
            return first
        }
        switch answer {
        case .given(let index):
            log("passkey: consent: notification \(id) answered: \(Self.describe(index, of: prompt))")
        case .declined: log("passkey: consent: notification \(id) answered: deny")
        case .timedOut: log("passkey: consent: notification \(id) expired without an answer")
        case .cancelled: log("passkey: consent: notification \(id) withdrawn: the request was cancelled")
        }
        if answer == .timedOut || answer == .cancelled {
            // Withdrawn from the screen, in a task of its own so that a cancelled request still sends it; a server
            // that already closed it answers with an error, which changes nothing.
            let connection = connection
            await Task {
                try? await connection.callIgnoringReply(
                    Self.method("CloseNotification"), [.uint32(id)], timeout: .seconds(2))
            }.value
        }
        return answer
    }

    /// The arguments of `Notify` (`susssasa{sv}i`) as every notification of ours sends them: from `passkey`, a new
    /// notification (replaces none), critical urgency in the `device` category with the `passkey` desktop entry,
    /// and, when given, an `image-data` hint.
    static func notifyArguments(
        icon: String, summary: String, body: String, actions: [String], timeout: Duration, image: DBusValue? = nil
    ) -> [DBusValue] {
        var hints: [String: DBusValue] = [
            "urgency": .byte(2), "category": .string("device"), "desktop-entry": .string("passkey"),
        ]
        if let image { hints["image-data"] = image }
        return [
            .string("passkey"), .uint32(0), .string(icon), .string(summary), .string(body), .strings(actions),
            .variantDictionary(hints), .int32(Int32(clamping: timeout.components.seconds * 1000)),
        ]
    }

    // MARK: A QR code to scan

    /// The `image-data` hint of the Desktop Notifications Specification 1.2, `(iiibiiay)`: width, height, row stride,
    /// alpha, bits per sample, channels and the pixels, here `image` as 8-bit RGB without alpha.
    static func imageData(_ image: GrayImage) -> DBusValue {
        .structure([
            .int32(Int32(image.width)), .int32(Int32(image.height)), .int32(Int32(image.width * 3)), .bool(false),
            .int32(8), .int32(3), .bytes(image.pixels.flatMap { [$0, $0, $0] }),
        ])
    }

    /// Shows the QR code of `url` for a phone to scan (a phone behind the security key): the image in the
    /// `image-data` hint, the URL in the body, no actions, expiring with `timeout`. Returns the notification's ID for
    /// ``withdraw(_:)``; nil when no server took it (the code is on standard error all the same).
    func showQRCode(url: String, summary: String, timeout: Duration, log: @Sendable (String) -> Void) async -> UInt32? {
        let image: GrayImage
        do {
            image = try QRMatrix(encoding: url).grayImage(moduleSize: 6, quietZone: 4)
        } catch {
            log("passkey: phone: the QR code could not be drawn for a notification: \(error)")
            return nil
        }
        do {
            let reply = try await connection.call(
                Self.method("Notify"),
                Self.notifyArguments(
                    icon: "phone", summary: summary, body: "Scan it with your phone's camera.\n" + url, actions: [],
                    timeout: timeout, image: Self.imageData(image)),
                timeout: Self.notifyTimeout)
            var arguments = reply.arguments
            let id = try? arguments.next(UInt32.self)
            if let id { log("passkey: phone: QR code shown in notification \(id)") }
            return id
        } catch {
            log("passkey: phone: no notification server showed the QR code (\(error))")
            return nil
        }
    }

    /// Takes notification `id` off the screen (the phone came near, or the request ended).
    func withdraw(_ id: UInt32) async {
        try? await connection.callIgnoringReply(Self.method("CloseNotification"), [.uint32(id)], timeout: .seconds(2))
    }
}
