-- xxl_job_logglue rows for the GLUE history import test, loaded after
-- gen34.sql and jobs.sql: job 39 (GLUE_SHELL, current source "GLUE代码初始化"
-- saved 2024-05-01 10:00:00) was edited twice before; job 23 (GLUE(Java))
-- is not imported, so its history is not either.
INSERT INTO `xxl_job_logglue` (`id`, `job_id`, `glue_type`, `glue_source`, `glue_remark`, `add_time`, `update_time`) VALUES
  (1, 39, 'GLUE_SHELL', '#!/bin/bash\necho "rotating v1"\n', 'first cut', '2024-03-01 09:00:00', '2024-03-01 09:00:00'),
  (2, 23, 'GLUE_GROOVY', 'class A {}', 'java', '2024-03-02 09:00:00', '2024-03-02 09:00:00'),
  (3, 39, 'GLUE_SHELL', '#!/bin/bash\necho "rotating v2, keep $1 days"\n', 'keep 14 days', '2024-04-01 09:00:00', NULL);
