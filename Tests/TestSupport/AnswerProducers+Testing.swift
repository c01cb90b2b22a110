import SyncAPI

extension AnswerProducers {
    /// The producers of the engines that tests build without an application (an application runs its own as a
    /// service): one host, run for the whole test process.
    public static let testing: AnswerProducers = {
        let producers = AnswerProducers()
        Task.detached { await producers.run() }
        return producers
    }()
}
