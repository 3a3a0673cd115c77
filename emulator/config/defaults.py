"""Apache RocketMQ's broker properties and their defaults per version profile: the 4.9.1 list in the order the real
broker returns it for GET_BROKER_CONFIG (recorded, `26_GET_BROKER_CONFIG.json`), the keys 4.9.3 added, and what 5.x
changed (BrokerConfig, MessageStoreConfig, NettyServerConfig, NettyClientConfig at each release tag).
A value of None is computed at start-up (paths under the user's home, local address, host name, cores)."""
from __future__ import annotations

DEFAULTS_4_9_1: tuple[tuple[str, str | None], ...] = (
    ("shortPollingTimeMills", "1000"),
    ("clientWorkerThreads", "4"),
    ("clientAsyncSemaphoreValue", "65535"),
    ("channelNotActiveInterval", "60000"),
    ("enableConsumeQueueExt", "false"),
    ("clientSocketSndBufSize", "131072"),
    ("haHousekeepingInterval", "20000"),
    ("consumerManageThreadPoolNums", "32"),
    ("transactionCheckInterval", "60000"),
    ("storePathRootDir", None),  # computed at start-up
    ("autoCreateTopicEnable", "true"),
    ("syncFlushTimeout", "5000"),
    ("clientChannelMaxIdleTimeSeconds", "120"),
    ("autoDeleteUnusedStats", "false"),
    ("maxIndexNum", "20000000"),
    ("defaultTopicQueueNums", "8"),
    ("clientSocketRcvBufSize", "131072"),
    ("clientManagerThreadPoolQueueCapacity", "1000000"),
    ("debugLockEnable", "false"),
    ("notifyConsumerIdsChangedEnable", "true"),
    ("brokerFastFailureEnable", "true"),
    ("transientStorePoolEnable", "false"),
    ("queryMessageThreadPoolNums", "10"),
    ("maxMessageSize", "4194304"),
    ("useReentrantLockWhenPutMessage", "true"),
    ("waitTimeMillsInTransactionQueue", "3000"),
    ("messageIndexEnable", "true"),
    ("commercialBaseCount", "1"),
    ("diskFallRecorded", "true"),
    ("endTransactionThreadPoolNums", "12"),
    ("filterSupportRetry", "false"),
    ("brokerTopicEnable", "true"),
    ("destroyMapedFileIntervalForcibly", "120000"),
    ("messageDelayLevel", "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"),
    ("offsetCheckInSlave", "false"),
    ("deleteConsumeQueueFilesInterval", "100"),
    ("flushCommitLogTimed", "true"),
    ("haSlaveFallbehindMax", "268435456"),
    ("waitTimeMillsInSendQueue", "200"),
    ("defaultQueryMaxNum", "32"),
    ("namesrvAddr", None),  # computed at start-up
    ("clientCloseSocketIfTimeout", "true"),
    ("haSendHeartbeatInterval", "5000"),
    ("serverCallbackExecutorThreads", "0"),
    ("brokerName", None),  # computed at start-up
    ("fetchNamesrvAddrByAddressServer", "false"),
    ("longPollingEnable", "true"),
    ("enableCalcFilterBitMap", "false"),
    ("redeleteHangedFileInterval", "120000"),
    ("diskMaxUsedSpaceRatio", "75"),
    ("transactionCheckMax", "15"),
    ("maxTransferBytesOnMessageInMemory", "262144"),
    ("enableScheduleMessageStats", "true"),
    ("flushCommitLogLeastPages", "4"),
    ("maxHashSlotNum", "5000000"),
    ("sendMessageThreadPoolNums", None),  # computed at start-up
    ("serverSocketRcvBufSize", "131072"),
    ("putMsgIndexHightWater", "600000"),
    ("accessMessageInMemoryMaxRatio", "40"),
    ("slaveReadEnable", "false"),
    ("fileReservedTime", "72"),
    ("enableDLegerCommitLog", "false"),
    ("commercialTransCount", "1"),
    ("replyThreadPoolQueueCapacity", "10000"),
    ("consumerFallbehindThreshold", "17179869184"),
    ("maxErrorRateOfBloomFilter", "20"),
    ("storeReplyMessageEnable", "true"),
    ("heartbeatThreadPoolNums", "2"),
    ("startAcceptSendRequestTimeStamp", "0"),
    ("traceOn", "true"),
    ("flushDiskType", "ASYNC_FLUSH"),
    ("rejectTransactionMessage", "false"),
    ("flushIntervalConsumeQueue", "1000"),
    ("clientOnewaySemaphoreValue", "65535"),
    ("isEnableBatchPush", "false"),
    ("highSpeedMode", "false"),
    ("adminBrokerThreadPoolNums", "16"),
    ("flushConsumeQueueThoroughInterval", "60000"),
    ("sendThreadPoolQueueCapacity", "10000"),
    ("commercialTimerCount", "1"),
    ("pullThreadPoolQueueCapacity", "100000"),
    ("haListenPort", "10912"),
    ("commitIntervalCommitLog", "200"),
    ("serverSocketSndBufSize", "131072"),
    ("flushConsumeQueueLeastPages", "2"),
    ("mappedFileSizeConsumeQueue", "6000000"),
    ("transientStorePoolSize", "5"),
    ("registerNameServerPeriod", "30000"),
    ("serverChannelMaxIdleTimeSeconds", "120"),
    ("disableConsumeIfConsumerReadSlowly", "false"),
    ("commercialBigCount", "1"),
    ("mappedFileSizeCommitLog", "1073741824"),
    ("maxTransferBytesOnMessageInDisk", "65536"),
    ("serverOnewaySemaphoreValue", "256"),
    ("checkCRCOnRecover", "true"),
    ("forceRegister", "true"),
    ("transferMsgByHeap", "true"),
    ("flushConsumerOffsetInterval", "5000"),
    ("flushDelayOffsetInterval", "10000"),
    ("endTransactionPoolQueueCapacity", "100000"),
    ("flushIntervalCommitLog", "500"),
    ("waitTimeMillsInPullQueue", "5000"),
    ("deleteWhen", "04"),
    ("flushCommitLogThoroughInterval", "10000"),
    ("aclEnable", "false"),
    ("cleanResourceInterval", "10000"),
    ("serverAsyncSemaphoreValue", "64"),
    ("connectTimeoutMillis", "3000"),
    ("storePathCommitLog", None),  # computed at start-up
    ("clientPooledByteBufAllocatorEnable", "false"),
    ("commitCommitLogThoroughInterval", "200"),
    ("rocketmqHome", None),  # computed at start-up
    ("useEpollNativeSelector", "false"),
    ("maxTransferCountOnMessageInMemory", "32"),
    ("serverPooledByteBufAllocatorEnable", "true"),
    ("autoCreateSubscriptionGroup", "true"),
    ("flushLeastPagesWhenWarmMapedFile", "4096"),
    ("filterDataCleanTimeSpan", "86400000"),
    ("warmMapedFileEnable", "false"),
    ("traceTopicEnable", "false"),
    ("clientManageThreadPoolNums", "32"),
    ("consumerManagerThreadPoolQueueCapacity", "1000000"),
    ("cleanFileForciblyEnable", "true"),
    ("serverSelectorThreads", "3"),
    ("compressedRegister", "false"),
    ("brokerIP2", None),  # computed at start-up
    ("commitCommitLogLeastPages", "4"),
    ("brokerRole", "ASYNC_MASTER"),
    ("brokerIP1", None),  # computed at start-up
    ("brokerPermission", "6"),
    ("maxDelayTime", "40"),
    ("transactionTimeOut", "6000"),
    ("maxTransferCountOnMessageInDisk", "8"),
    ("clientCallbackExecutorThreads", "2"),
    ("filterServerNums", "0"),
    ("fastFailIfNoBufferInStorePool", "false"),
    ("useTLS", "false"),
    ("duplicationEnable", "false"),
    ("pullMessageThreadPoolNums", "20"),
    ("brokerId", "0"),
    ("registerBrokerTimeoutMills", "6000"),
    ("mappedFileSizeConsumeQueueExt", "50331648"),
    ("msgTraceTopicName", "RMQ_SYS_TRACE_TOPIC"),
    ("osPageCacheBusyTimeOutMills", "1000"),
    ("expectConsumerNumUseFilter", "32"),
    ("serverWorkerThreads", "8"),
    ("queryThreadPoolQueueCapacity", "20000"),
    ("maxMsgsNumBatch", "64"),
    ("flushConsumerOffsetHistoryInterval", "60000"),
    ("bitMapLengthConsumeQueueExt", "112"),
    ("processReplyMessageThreadPoolNums", "20"),
    ("clusterTopicEnable", "true"),
    ("regionId", "DefaultRegion"),
    ("brokerClusterName", "DefaultCluster"),
    ("commercialEnable", "true"),
    ("haTransferBatchSize", "32768"),
    ("messageStorePlugIn", ""),
    ("listenPort", "10911"),
    ("waitTimeMillsInHeartbeatQueue", "31000"),
    ("messageIndexSafe", "false"),
    ("heartbeatThreadPoolQueueCapacity", "50000"),
    ("enablePropertyFilter", "false"),
    ("deleteCommitLogFilesInterval", "100"),
)
"""Every 4.9.1 property with a non-null default, in the real broker's GET_BROKER_CONFIG order."""

NULL_KEYS_4_9_1: tuple[str, ...] = ("haMasterAddress", "dLegerGroup", "dLegerPeers", "dLegerSelfId", "preferredLeaderId")
"""4.9.1 properties whose default is null: accepted in broker.conf, left out of GET_BROKER_CONFIG until set."""

ADDED_4_9_3: tuple[tuple[str, str | None], ...] = (
    ("putMessageFutureThreadPoolNums", None),
    ("putThreadPoolQueueCapacity", "10000"),
    ("enableDetailStat", "true"),
    ("isolateLogEnable", "false"),
    ("writeBufferHighWaterMark", "0"),
    ("writeBufferLowWaterMark", "0"),
    ("serverSocketBacklog", "1024"),
    ("slaveTimeout", "3000"),
    ("enableLmq", "false"),
    ("enableMultiDispatch", "false"),
    ("maxLmqConsumeQueueNum", "20000"),
    ("enableScheduleAsyncDeliver", "false"),
    ("scheduleAsyncDeliverMaxPendingLimit", "2000"),
    ("scheduleAsyncDeliverMaxResendNum2Blocked", "3"),
)
"""Properties 4.9.3 added to 4.9.1's (`readOnlyCommitLogStorePaths` too, null by default)."""

REMOVED_5_X: tuple[str, ...] = (
    "commercialBigCount", "commercialEnable", "commercialTimerCount", "commercialTransCount",
    "filterServerNums", "haSlaveFallbehindMax", "isEnableBatchPush", "maxDelayTime",
)
"""4.9.x properties that 5.x no longer has (haSlaveFallbehindMax became haMaxGapNotInSync in RIP-34)."""

ADDED_5_X: tuple[tuple[str, str | None], ...] = (
    ("totalReplicas", "1"),
    ("inSyncReplicas", "1"),
    ("minInSyncReplicas", "1"),
    ("allAckInSyncStateSet", "false"),
    ("enableAutoInSyncReplicas", "false"),
    ("haMaxGapNotInSync", "268435456"),
    ("haMaxTimeSlaveNotCatchup", "15000"),
    ("putMessageTimeout", "8000"),
    ("haFlowControlEnable", "false"),
    ("maxHaTransferByteInSecond", "104857600"),
    ("enableSlaveActingMaster", "false"),
    ("enableControllerMode", "false"),
    ("controllerAddr", ""),
    ("fetchControllerAddrByDnsLookup", "false"),
    ("syncBrokerMetadataPeriod", "5000"),
    ("checkSyncStateSetPeriod", "5000"),
    ("syncControllerMetadataPeriod", "10000"),
    ("controllerHeartBeatTimeoutMills", "10000"),
    ("brokerHeartbeatInterval", "1000"),
    ("sendHeartbeatTimeoutMillis", "1000"),
    ("brokerElectionPriority", "2147483647"),
    ("syncFromLastFile", "false"),
    ("asyncLearner", "false"),
    ("readUnCommitted", "false"),
    ("storePathEpochFile", None),
    ("storePathBrokerIdentity", None),
)
"""The 5.x properties the emulator models (replica counts, RIP-34, RIP-44 controller mode with 5.3.0's defaults:
`BrokerConfig` / `MessageStoreConfig` at rocketmq-all-5.3.0); other 5.x names are accepted (KEYS_5_X)."""

KEYS_5_X: frozenset[str] = frozenset(
    """
    accessMessageInMemoryHotRatio accessMessageInMemoryMaxRatio accountStatsEnable accountStatsPrintZeroValues
    ackMessageThreadPoolNums ackThreadPoolQueueCapacity aclEnable adminBrokerThreadPoolNums
    adminBrokerThreadPoolQueueCapacity allAckInSyncStateSet asyncLearner asyncSendEnable
    autoCreateSubscriptionGroup autoCreateTopicEnable autoDeleteUnusedStats autoMessageVersionOnTopicLen
    batchDispatchRequestThreadPoolNums bindAddress bitMapLengthConsumeQueueExt broadcastOffsetExpireMaxSecond
    broadcastOffsetExpireSecond brokerClusterName brokerConfigPath brokerElectionPriority brokerFastFailureEnable
    brokerHeartbeatInterval brokerIP1 brokerIP2 brokerName brokerNotActiveTimeoutMillis brokerPermission
    brokerRole brokerTopicEnable cgColdReadThreshold channelExpiredTimeout channelNotActiveInterval
    checkCRCOnRecover checkSyncStateSetPeriod cleanFileForciblyEnable cleanOfflineBrokerInterval
    cleanResourceInterval cleanRocksDBDirtyCQIntervalMin cleanSwapedMapInterval clientAsyncSemaphoreValue
    clientCallbackExecutorThreads clientChannelMaxIdleTimeSeconds clientCloseSocketIfTimeout
    clientManageThreadPoolNums clientManagerThreadPoolQueueCapacity clientOnewaySemaphoreValue
    clientPooledByteBufAllocatorEnable clientSocketRcvBufSize clientSocketSndBufSize clientWorkerThreads
    clusterTopicEnable coldCtrStrategyEnable coldDataFlowControlEnable coldDataScanEnable commercialBaseCount
    commercialSizePerMsg commitCommitLogLeastPages commitCommitLogThoroughInterval commitIntervalCommitLog
    commitLogForceSwapMapInterval commitLogRollingInterval commitLogRollingMinimumSize commitLogSwapMapInterval
    commitLogSwapMapReserveFileNum compactionCqMappedFileSize compactionMappedFileSize compactionScheduleInternal
    compactionThreadNum compatibleWithOldNameSrv compressedRegister configBlackList connectTimeoutMillis
    consumerFallbehindThreshold consumerManageThreadPoolNums consumerManagerThreadPoolQueueCapacity
    consumerOffsetUpdateVersionStep controllerAddr controllerHeartBeatTimeoutMills
    correctLogicMinOffsetForceInterval correctLogicMinOffsetSleepInterval dLegerGroup dLegerPeers dLegerSelfId
    dataReadAheadEnable debugLockEnable defaultMessageRequestMode defaultPopShareQueueNum defaultQueryMaxNum
    defaultTopicQueueNums delayOffsetUpdateVersionStep deleteCommitLogFilesInterval
    deleteConsumeQueueFilesInterval deleteFileBatchMax deleteWhen destroyMapedFileIntervalForcibly
    disableCallbackExecutor disableConsumeIfConsumerReadSlowly disableNettyWorkerGroup disappearTimeAfterStart
    diskFallRecorded diskMaxUsedSpaceRatio diskSpaceCleanForciblyRatio diskSpaceWarningLevelRatio
    dispatchCqCacheNum dispatchCqThreads dispatchFromSenderThread duplicationEnable enableAsyncReput
    enableAutoInSyncReplicas enableBatchPush enableBroadcastOffsetStore enableBuildConsumeQueueConcurrently
    enableCalcFilterBitMap enableCleanExpiredOffset enableCompaction enableConsumeQueueExt enableControllerMode
    enableDLegerCommitLog enableDetailStat enableLmq enableMixedMessageType enableMultiDispatch
    enableNetWorkFlowControl enableNotifyAfterPopOrderLockRelease enablePopBatchAck enablePopBufferMerge
    enablePopLog enablePopMessageThreshold enablePropertyFilter enableReconnectForGoAway enableRemoteEscape
    enableRetryTopicV2 enableRocksDBLog enableScheduleAsyncDeliver enableScheduleMessageStats
    enableShutdownGracefully enableSingleTopicRegister enableSkipLongAwaitingAck enableSlaveActingMaster
    enableSplitRegistration enableTransparentRetry enabledAppendPropCRC endTransactionPoolQueueCapacity
    endTransactionThreadPoolNums estimateAccumulation expectConsumerNumUseFilter fastFailIfNoBufferInStorePool
    fetchControllerAddrByDnsLookup fetchNameSrvAddrByDnsLookup fetchNamesrvAddrByAddressServer
    fetchNamesrvAddrInterval fileReservedTime filterDataCleanTimeSpan filterSupportRetry flushCommitLogLeastPages
    flushCommitLogThoroughInterval flushCommitLogTimed flushConsumeQueueLeastPages
    flushConsumeQueueThoroughInterval flushConsumerOffsetHistoryInterval flushConsumerOffsetInterval
    flushDelayOffsetInterval flushDiskType flushIntervalCommitLog flushIntervalConsumeQueue
    flushLeastPagesWhenWarmMapedFile forceRegister forceVerifyPropCRC forwardTimeout globalColdReadThreshold
    haFlowControlEnable haHousekeepingInterval haListenPort haMasterAddress haMaxGapNotInSync
    haMaxTimeSlaveNotCatchup haSendHeartbeatInterval haTransferBatchSize heartbeatThreadPoolNums
    heartbeatThreadPoolQueueCapacity highSpeedMode inSyncReplicas initPopOffsetByCheckMsgInMem
    isScanAvailableNameSrv isolateLogEnable listenPort litePullMessageEnable litePullMessageThreadPoolNums
    litePullThreadPoolQueueCapacity loadBalancePollNameServerInterval loadBalanceProcessorThreadPoolNums
    loadBalanceThreadPoolQueueCapacity lockInStrictMode logicQueueForceSwapMapInterval logicQueueSwapMapInterval
    logicQueueSwapMapReserveFileNum logicalDiskSpaceCleanForciblyThreshold longPollingEnable
    mappedFileSizeCommitLog mappedFileSizeConsumeQueue mappedFileSizeConsumeQueueExt mappedFileSizeTimerLog
    mappedFileSwapEnable mapperFileSizeBatchConsumeQueue maxAsyncPutMessageRequests maxBatchDeleteFilesNum
    maxChecksumRange maxCommitJitter maxConsumeQueueScan maxErrorRateOfBloomFilter maxFilterMessageSize
    maxHaTransferByteInSecond maxHashSlotNum maxIndexNum maxLmqConsumeQueueNum maxMessageSize maxMsgsNumBatch
    maxOffsetMapSize maxPopPollingSize maxReconnectIntervalTimeSeconds maxRecoveryCommitlogFiles
    maxSlaveResendLength maxTopicLength maxTransferBytesOnMessageInDisk maxTransferBytesOnMessageInMemory
    maxTransferCountOnMessageInDisk maxTransferCountOnMessageInMemory memTableFlushIntervalMs messageDelayLevel
    messageIndexEnable messageIndexSafe messageStorePlugIn metricGrpcExporterIntervalInMills
    metricGrpcExporterTimeOutInMills metricLoggingExporterIntervalInMills metricsExporterType
    metricsGrpcExporterHeader metricsGrpcExporterTarget metricsInDelta metricsLabel metricsOtelCardinalityLimit
    metricsPromExporterHost metricsPromExporterPort minInSyncReplicas msgTraceTopicName namesrvAddr
    notifyConsumerIdsChangedEnable objectStoreAccessKey objectStoreBucket objectStoreEndpoint
    objectStoreSecretKey offsetCheckInSlave osPageCacheBusyTimeOutMills popCkMaxBufferSize
    popCkOffsetMaxQueueSize popCkStayBufferTime popCkStayBufferTimeOut popInflightMessageThreshold
    popPollingMapSize popPollingSize popResponseReturnActualRetryTopic preferredLeaderId
    processReplyMessageThreadPoolNums pullBatchMaxMessageCount pullMessageThreadPoolNums
    pullThreadPoolQueueCapacity putMessageFutureThreadPoolNums putMessageTimeout putMsgIndexHightWater
    putThreadPoolQueueCapacity queryMessageThreadPoolNums queryThreadPoolQueueCapacity readAheadCacheEnable
    readAheadCacheExpireDuration readAheadCacheSizeThresholdRate readAheadMessageCountThreshold
    readAheadMessageSizeThreshold readOnlyCommitLogStorePaths readUnCommitted realTimeNotifyConsumerChange
    realTimePersistRocksDBConfig recheckReputOffsetFromCq recordGetMessageResult recoverConcurrently
    recoverThreadPoolNums redeleteHangedFileInterval regionId registerBrokerTimeoutMills registerNameServerPeriod
    rejectPullConsumerEnable rejectTransactionMessage replicasPerDiskPartition replyThreadPoolQueueCapacity
    retrieveMessageFromPopRetryTopicV1 reviveAckWaitMs reviveInterval reviveMaxSlow reviveQueueNum reviveScanTime
    rocketmqHome sampleCountThreshold sampleSteps scheduleAsyncDeliverMaxPendingLimit
    scheduleAsyncDeliverMaxResendNum2Blocked searchBcqByCacheEnable sendHeartbeatTimeoutMillis
    sendMessageThreadPoolNums sendThreadPoolQueueCapacity serverAsyncSemaphoreValue serverCallbackExecutorThreads
    serverChannelMaxIdleTimeSeconds serverLoadBalancerEnable serverOnewaySemaphoreValue
    serverPooledByteBufAllocatorEnable serverSelectorThreads serverSocketBacklog serverSocketRcvBufSize
    serverSocketSndBufSize serverWorkerThreads shortPollingTimeMills shutdownWaitTimeSeconds skipPreOnline
    slaveReadEnable slaveTimeout socksProxyConfig splitRegistrationSize startAcceptSendRequestTimeStamp
    statRocksDBCQIntervalSec storePathBrokerIdentity storePathCommitLog storePathDLedgerCommitLog
    storePathEpochFile storePathRootDir storeReplyMessageEnable storeType subscriptionExpiredTimeout
    syncBrokerMemberGroupPeriod syncBrokerMetadataPeriod syncControllerMetadataPeriod syncFlushTimeout
    syncFromLastFile syncMasterFlushOffsetWhenStartup tieredBackendServiceProvider tieredMetadataServiceProvider
    tieredStorageLevel tieredStoreCommitLogMaxSize tieredStoreConsumeQueueMaxSize tieredStoreCrcCheckEnable
    tieredStoreFilePath tieredStoreFileReservedTime tieredStoreGroupCommit tieredStoreGroupCommitCount
    tieredStoreGroupCommitSize tieredStoreGroupCommitTimeout tieredStoreIndexFileMaxHashSlotNum
    tieredStoreIndexFileMaxIndexNum tieredStoreIndexFileRollingIdleInterval tieredStoreMaxFallBehindSize
    tieredStoreMaxGroupCommitCount tieredStoreMaxPendingLimit timerCheckMetricsWhen timerColdDataCheckIntervalMs
    timerCongestNumEachSlot timerEnableCheckMetrics timerEnableDisruptor timerFlushIntervalMs
    timerGetMessageThreadNum timerInterceptDelayLevel timerMaxDelaySec timerMetricSmallThreshold timerPrecisionMs
    timerProgressLogIntervalMs timerPutMessageThreadNum timerRollWindowSlot timerSkipUnknownError
    timerStopDequeue timerStopEnqueue timerWarmEnable timerWheelEnable topicQueueLockNum totalReplicas traceOn
    traceTopicEnable transactionCheckInterval transactionCheckMax transactionMetricFlushInterval
    transactionOpBatchInterval transactionOpMsgMaxSize transactionTimeOut transferMsgByHeap
    transientStorePoolEnable transientStorePoolSize travelCqFileNumWhenGetMessage useEpollNativeSelector
    usePIDColdCtrStrategy useReentrantLockWhenPutMessage useServerSideResetOffset useStaticSubscription useTLS
    validateSystemTopicWhenUpdateTopic waitTimeMillsInAckQueue waitTimeMillsInAdminBrokerQueue
    waitTimeMillsInHeartbeatQueue waitTimeMillsInLitePullQueue waitTimeMillsInPullQueue waitTimeMillsInSendQueue
    waitTimeMillsInTransactionQueue wakeCommitWhenPutMessage wakeFlushWhenPutMessage warmMapedFileEnable
    writeBufferHighWaterMark writeBufferLowWaterMark
    brokerId brokerName brokerClusterName
    """.split()
)
"""Every property name of 5.3.0's BrokerConfig, MessageStoreConfig, NettyServerConfig and NettyClientConfig."""
