import CTAP2
import PasskeyProvider
import Synchronization

/// A person who answers from a script, in order, and remembers what they were asked and told: the provider's UI in
/// tests. Running out of script answers `.declined` and records an unexpected prompt.
final class ScriptedPerson: ProviderUserInterface {
    enum Prompt: Hashable, Sendable {
        case confirm(ProviderQuestion)
        case choose(ChoiceRequest)
        case secret(SecretRequest)
    }

    enum Reply: Sendable {
        case yes, no, cancel, timeOut, endOfInput
        case pick(Int)
        case type(String)
    }

    private struct State {
        var script: [Reply]
        var prompts: [Prompt] = []
        var events: [ProviderEvent] = []
        var unexpected = 0
    }

    private let state: Mutex<State>

    init(_ script: [Reply] = []) {
        state = Mutex(State(script: script))
    }

    var prompts: [Prompt] { state.withLock { $0.prompts } }
    var events: [ProviderEvent] { state.withLock { $0.events } }
    /// Prompts that found the script empty.
    var unexpectedPrompts: Int { state.withLock { $0.unexpected } }
    /// Script replies nobody asked for.
    var unusedReplies: Int { state.withLock { $0.script.count } }

    /// The phone's events, in order.
    var phoneEvents: [PhoneEvent] {
        events.compactMap { if case .phone(let event) = $0 { event } else { nil } }
    }

    /// The computer's events, in order.
    var computerEvents: [ComputerEvent] {
        events.compactMap { if case .computer(let event) = $0 { event } else { nil } }
    }

    private func next(_ prompt: Prompt) -> Reply? {
        state.withLock { state in
            state.prompts.append(prompt)
            guard !state.script.isEmpty else {
                state.unexpected += 1
                return nil
            }
            return state.script.removeFirst()
        }
    }

    func confirm(_ question: ProviderQuestion) async -> PromptAnswer<Bool> {
        switch next(.confirm(question)) {
        case .yes: .given(true)
        case .no: .given(false)
        case .cancel: .cancelled
        case .timeOut: .timedOut
        case .endOfInput, .pick, .type, nil: .declined
        }
    }

    func choose(_ request: ChoiceRequest) async -> PromptAnswer<Int> {
        switch next(.choose(request)) {
        case .pick(let index): .given(index)
        case .cancel: .cancelled
        case .timeOut: .timedOut
        default: .declined
        }
    }

    func secret(_ request: SecretRequest) async -> PromptAnswer<String> {
        switch next(.secret(request)) {
        case .type(let text): .given(text)
        case .cancel: .cancelled
        case .timeOut: .timedOut
        default: .declined
        }
    }

    func report(_ event: ProviderEvent) {
        state.withLock { $0.events.append(event) }
    }
}
